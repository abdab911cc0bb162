// Bevy writes `Trigger<OnAdd, Health>`; mosaic names the component inside
// the event: `Trigger<OnAdd<Health>>`.
use mosaic::prelude::*;

#[derive(Component)]
struct Health(u32);

fn on_add_health(trigger: Trigger<OnAdd, Health>, _world: DeferredWorld) {
    let _ = trigger.entity();
}

fn main() {
    let mut world = World::new();
    world.observe(on_add_health);
}
