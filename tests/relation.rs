//! Relations and hierarchies: relate/unrelate on both sides with O(1)
//! swap-remove bookkeeping, cardinality, data per edge, cleanup policies on
//! despawn, recursive despawn, parent-first order, queries and filters over
//! relations, commands, observers, and a property test on random forests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mosaic::prelude::*;
use mosaic::{ChildSpawner, EntityError, OnRelate, OnUnrelate, RelationError};
use proptest::prelude::*;

mod common;
use common::relations::{DependsOn, Lcg, OwnedBy, spawn_n};

#[derive(Relation, Debug, PartialEq)]
struct Likes;

#[derive(Relation, Debug, PartialEq, Clone, Copy)]
struct Damage {
    amount: u32,
}

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Pos(f32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Global(f32);

#[derive(Component)]
struct Marker;

#[test]
fn relate_many_targets_and_sources() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[0], e[2], Likes).unwrap();
    world.relate(e[3], e[2], Likes).unwrap();
    world.relate(e[0], e[1], Likes).unwrap(); // existing edge: no duplicate
    assert_eq!(world.targets::<Likes>(e[0]), [e[1], e[2]]);
    assert_eq!(world.sources::<Likes>(e[2]), [e[0], e[3]]);
    assert!(world.has_relation::<Likes>(e[3], e[2]));
    assert!(!world.has_relation::<Likes>(e[2], e[3]));
    world.check_invariants();

    assert_eq!(world.unrelate::<Likes>(e[0], e[1]), Ok(Likes));
    assert_eq!(world.targets::<Likes>(e[0]), [e[2]]);
    assert!(world.sources::<Likes>(e[1]).is_empty());
    assert!(!world.has::<Sources<Likes>>(e[1]));
    world.check_invariants();
    assert_eq!(
        world.unrelate::<Likes>(e[0], e[1]),
        Err(RelationError::NotRelated {
            entity: e[0],
            target: e[1],
            relation: "Likes",
        })
    );
}

#[test]
fn edge_data_is_kept_replaced_and_returned() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Damage { amount: 3 }).unwrap();
    world.relate(e[0], e[2], Damage { amount: 5 }).unwrap();
    world.relate(e[0], e[1], Damage { amount: 7 }).unwrap();
    assert_eq!(
        world.relation::<Damage>(e[0], e[1]),
        Some(&Damage { amount: 7 })
    );
    world.relation_mut::<Damage>(e[0], e[2]).unwrap().amount += 1;
    let total: u32 = world
        .get::<Relation<Damage>>(e[0])
        .unwrap()
        .iter()
        .map(|(_, d)| d.amount)
        .sum();
    assert_eq!(total, 13);
    assert_eq!(
        world.unrelate::<Damage>(e[0], e[2]),
        Ok(Damage { amount: 6 })
    );
    world.check_invariants();
}

#[test]
fn stale_entities_are_refused() {
    let mut world = World::new();
    let a = world.spawn(());
    let b = world.spawn(());
    world.despawn(b).unwrap();
    assert_eq!(
        world.relate(a, b, Likes),
        Err(RelationError::NoSuchEntity(b))
    );
    assert_eq!(
        world.relate(b, a, Likes),
        Err(RelationError::NoSuchEntity(b))
    );
    assert!(world.targets::<Likes>(b).is_empty());
    assert!(!world.has::<Relation<Likes>>(a));
    world.check_invariants();
}

#[test]
fn removal_fixes_the_moved_edges_back_indices() {
    // A source with many targets and targets with many sources: remove
    // edges from the middle in every order and check both sides each time.
    let mut world = World::new();
    let e = spawn_n(&mut world, 12);
    for &s in &e[..6] {
        for &t in &e[6..] {
            world
                .relate(
                    s,
                    t,
                    Damage {
                        amount: s.index() * 100 + t.index(),
                    },
                )
                .unwrap();
        }
    }
    world.check_invariants();
    let mut removed = 0;
    for (k, &s) in e[..6].iter().enumerate() {
        for (m, &t) in e[6..].iter().enumerate() {
            if (k + m) % 3 == 0 {
                let d = world.unrelate::<Damage>(s, t).unwrap();
                assert_eq!(d.amount, s.index() * 100 + t.index());
                removed += 1;
                world.check_invariants();
            }
        }
    }
    // The data stays with its edge through all the swaps.
    for &s in &e[..6] {
        for (t, d) in world.get::<Relation<Damage>>(s).unwrap().iter() {
            assert_eq!(d.amount, s.index() * 100 + t.index());
        }
    }
    let left: usize = e[..6]
        .iter()
        .map(|&s| world.targets::<Damage>(s).len())
        .sum();
    assert_eq!(left, 36 - removed);
}

#[test]
fn one_relation_replaces_its_target() {
    let mut world = World::new();
    let (a, b, child) = (world.spawn(()), world.spawn(()), world.spawn(()));
    world.add_child(a, child).unwrap();
    world.add_child(b, child).unwrap();
    assert_eq!(world.parent(child), Some(b));
    assert!(world.children(a).is_empty());
    assert!(!world.has::<Children>(a));
    assert_eq!(world.children(b), [child]);
    assert_eq!(world.remove_parent(child), Ok(b));
    assert_eq!(
        world.remove_parent(child),
        Err(RelationError::NoTarget {
            entity: child,
            relation: "ChildOf"
        })
    );
    world.check_invariants();
}

#[test]
fn relations_make_no_archetypes() {
    let mut world = World::new();
    let n = if cfg!(miri) { 20 } else { 1000 };
    let parents: Vec<Entity> = (0..n).map(|i| world.spawn(Pos(i as f32))).collect();
    let children: Vec<Entity> = (0..n).map(|i| world.spawn(Pos(i as f32))).collect();
    let before = world.archetype_count();
    for (&p, &c) in parents.iter().zip(&children) {
        world.add_child(p, c).unwrap();
        world.relate(c, p, Likes).unwrap();
    }
    assert_eq!(world.archetype_count(), before);
    for &c in &children[..n / 2] {
        world.despawn(c).unwrap();
    }
    assert_eq!(world.archetype_count(), before);
    world.check_invariants();
}

#[test]
fn despawn_removes_every_edge_of_either_end() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 5);
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[2], e[1], Likes).unwrap();
    world.relate(e[1], e[3], Likes).unwrap();
    world.relate(e[1], e[4], Likes).unwrap();
    world.add_child(e[1], e[0]).unwrap();
    world.add_child(e[4], e[1]).unwrap();
    world.despawn(e[1]).unwrap();
    world.check_invariants();
    assert!(world.targets::<Likes>(e[0]).is_empty());
    assert!(world.targets::<Likes>(e[2]).is_empty());
    assert!(world.sources::<Likes>(e[3]).is_empty());
    assert!(world.sources::<Likes>(e[4]).is_empty());
    assert_eq!(world.parent(e[0]), None); // ChildOf unparents
    assert!(world.children(e[4]).is_empty());
    assert!(world.contains(e[0]) && world.contains(e[4]));
}

#[test]
fn despawn_policy_despawns_sources_iteratively() {
    let mut world = World::new();
    // A chain of ownership 10,000 long (50 under Miri): despawning the owner at the top
    // despawns them all, with no recursion.
    let top = world.spawn(());
    let mut last = top;
    let mut chain = vec![top];
    for _ in 0..if cfg!(miri) { 50 } else { 10_000 } {
        let e = world.spawn(());
        world.relate(e, last, OwnedBy).unwrap();
        chain.push(e);
        last = e;
    }
    let bystander = world.spawn(());
    world.relate(bystander, chain[5], Likes).unwrap();
    world.despawn(top).unwrap();
    assert!(chain.iter().all(|&e| !world.contains(e)));
    assert!(world.contains(bystander));
    assert!(world.targets::<Likes>(bystander).is_empty());
    world.check_invariants();
}

#[test]
fn refuse_policy_keeps_the_target() {
    let mut world = World::new();
    let (lib, app) = (world.spawn(Marker), world.spawn(()));
    world.relate(app, lib, DependsOn).unwrap();
    assert_eq!(
        world.despawn(lib),
        Err(EntityError::DespawnRefused {
            entity: lib,
            relation: "DependsOn"
        })
    );
    assert!(world.contains(lib) && world.has::<Marker>(lib));
    assert!(world.has_relation::<DependsOn>(app, lib));
    let parent = world.spawn(());
    world.add_child(parent, lib).unwrap();
    assert!(world.despawn_recursive(parent).is_err());
    assert!(world.contains(parent) && world.contains(lib));
    world.unrelate::<DependsOn>(app, lib).unwrap();
    world.despawn_recursive(parent).unwrap();
    assert!(!world.contains(lib));
    world.check_invariants();
}

#[test]
fn despawn_recursive_takes_children_before_parents() {
    let mut world = World::new();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = order.clone();
    world.observe(move |t: Trigger<OnDespawn>, _w: DeferredWorld| {
        seen.lock().unwrap().push(t.entity().unwrap());
    });
    let outside = world.spawn(());
    let root = world.spawn_child(outside, ()).unwrap();
    let mut all = vec![root];
    let mut spawner_kids = Vec::new();
    world
        .entity_mut(root)
        .unwrap()
        .with_children(|p: &mut ChildSpawner| {
            for _ in 0..3 {
                let k = p.spawn_with_children((), |g| {
                    g.spawn(());
                    g.spawn(());
                });
                spawner_kids.push(k);
            }
        });
    for &k in &spawner_kids {
        all.push(k);
        all.extend_from_slice(world.children(k));
    }
    assert_eq!(all.len(), 10);
    world.despawn_recursive(root).unwrap();
    assert!(all.iter().all(|&e| !world.contains(e)));
    assert!(world.children(outside).is_empty());
    let order = order.lock().unwrap();
    let pos = |e: Entity| order.iter().position(|&x| x == e).unwrap();
    for &k in &spawner_kids {
        assert!(pos(k) < pos(root));
    }
    world.check_invariants();
}

#[test]
#[cfg_attr(miri, ignore = "100,000 entities: too slow under Miri")]
fn despawn_recursive_of_a_deep_chain() {
    let mut world = World::new();
    let root = world.spawn(());
    let mut last = root;
    for _ in 0..100_000 {
        last = world.spawn_child(last, ()).unwrap();
    }
    world.despawn_recursive(root).unwrap();
    assert!(world.is_empty());
    world.check_invariants();
}

#[test]
fn parent_first_order_is_cached_until_the_relation_changes() {
    let mut world = World::new();
    let root = world.spawn(Pos(1.0));
    let a = world.spawn_child(root, Pos(2.0)).unwrap();
    let b = world.spawn_child(a, Pos(3.0)).unwrap();
    let c = world.spawn_child(root, Pos(4.0)).unwrap();
    let mut order = ParentFirst::<ChildOf>::new();
    let got = order.get(&world).to_vec();
    assert_eq!(got.len(), 4);
    let pos = |e: Entity| got.iter().position(|&x| x == e).unwrap();
    assert!(pos(root) < pos(a) && pos(a) < pos(b) && pos(root) < pos(c));
    order.get(&world);
    world.spawn(Pos(0.0)); // not a relation change
    order.get(&world);
    assert_eq!(order.rebuilds(), 1);
    world.set_parent(c, b).unwrap();
    let got = order.get(&world).to_vec();
    assert_eq!(order.rebuilds(), 2);
    let pos = |e: Entity| got.iter().position(|&x| x == e).unwrap();
    assert!(pos(b) < pos(c));
    // Another world never reuses this world's cache.
    let other = World::new();
    assert!(order.get(&other).is_empty());
}

#[test]
fn parent_first_over_a_many_relation_is_topological() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    // e3 likes e1 and e2, which both like e0.
    world.relate(e[3], e[1], Likes).unwrap();
    world.relate(e[3], e[2], Likes).unwrap();
    world.relate(e[1], e[0], Likes).unwrap();
    world.relate(e[2], e[0], Likes).unwrap();
    let order = world.parent_first::<Likes>();
    assert_eq!(order.len(), 4);
    assert_eq!(order[0], e[0]);
    assert_eq!(order[3], e[3]);
}

#[test]
fn queries_and_filters_see_relations() {
    let mut world = World::new();
    let parent = world.spawn(Pos(10.0));
    let child = world.spawn_child(parent, Pos(1.0)).unwrap();
    let loner = world.spawn(Pos(5.0));

    let mut q = world.query::<(&Pos, Relation<ChildOf>)>();
    let rows: Vec<(f32, Entity)> = q.iter(&world).map(|(p, r)| (p.0, r.target())).collect();
    assert_eq!(rows, [(1.0, parent)]);

    let mut roots = world.query_filtered::<Entity, Without<Relation<ChildOf>>>();
    let mut r: Vec<Entity> = roots.iter(&world).collect();
    r.sort();
    assert_eq!(r, {
        let mut v = vec![parent, loner];
        v.sort();
        v
    });

    let mut related =
        world.query_filtered::<Entity, Or<(With<Relation<ChildOf>>, With<Children>)>>();
    assert_eq!(related.iter(&world).count(), 2);

    let mut opt = world.query::<(Entity, Option<Relation<ChildOf>>, Option<&Children>)>();
    for (e, rel, kids) in opt.iter(&world) {
        match e {
            e if e == child => assert_eq!(rel.map(|r| r.target()), Some(parent)),
            e if e == parent => assert_eq!(kids.map(|k| k.as_slice()), Some(&[child][..])),
            _ => assert!(rel.is_none() && kids.is_none()),
        }
    }

    let mut added = world.query_filtered::<Entity, Added<Relation<ChildOf>>>();
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [child]);
    assert_eq!(added.iter(&world).count(), 0);
    world.add_child(child, loner).unwrap();
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [loner]);

    let mut changed_kids = world.query_filtered::<Entity, Changed<Children>>();
    changed_kids.iter(&world).count();
    let extra = world.spawn(());
    world.add_child(parent, extra).unwrap();
    assert_eq!(changed_kids.iter(&world).collect::<Vec<_>>(), [parent]);
}

#[test]
fn relation_query_declares_a_read() {
    let mut world = World::new();
    let q = world.query::<Relation<ChildOf>>();
    let id = world.component_id::<Relation<ChildOf>>().unwrap();
    assert!(q.access().reads(id));
    assert!(!q.access().writes(id));
}

#[test]
fn systems_read_relations_and_commands_edit_them() {
    let mut world = World::new();
    let parent = world.spawn(Pos(1.0));
    let child = world.spawn(Pos(2.0));
    world.run_system_once(move |mut commands: Commands| {
        commands.add_child(parent, child);
        commands.relate(child, parent, Damage { amount: 2 });
    });
    assert_eq!(world.parent(child), Some(parent));
    assert_eq!(
        world.relation::<Damage>(child, parent),
        Some(&Damage { amount: 2 })
    );

    fn propagate(q: Query<(&Pos, Relation<ChildOf>)>, mut out: Query<&mut Global>) {
        let _ = (&q, &mut out);
    }
    world.insert(child, Global(0.0)).unwrap();
    world.run_system_once(propagate);

    let total = world.run_system_once(|q: Query<(&Pos, Relation<Damage>)>| {
        q.iter().map(|(_, d)| d.data()[0].amount).sum::<u32>()
    });
    assert_eq!(total, 2);
    world.run_system_once(move |mut commands: Commands| {
        commands.unrelate::<Damage>(child, parent);
        commands.despawn_recursive(parent);
    });
    assert!(!world.contains(parent) && !world.contains(child));
    world.check_invariants();
}

#[test]
fn command_errors_name_the_relation_failure() {
    let mut world = World::new();
    let a = world.spawn(());
    let mut commands = CommandBuffer::new(&world);
    commands.unrelate::<Likes>(a, a);
    let errors = commands.apply(&mut world).unwrap_err();
    assert_eq!(errors.len(), 1);
}

#[test]
fn observers_hear_relate_and_unrelate() {
    let mut world = World::new();
    let related = Arc::new(AtomicUsize::new(0));
    let unrelated = Arc::new(AtomicUsize::new(0));
    let (r, u) = (related.clone(), unrelated.clone());
    world.observe(move |_t: Trigger<OnRelate<Likes>>, _w: DeferredWorld| {
        r.fetch_add(1, Ordering::Relaxed);
    });
    world.observe(move |_t: Trigger<OnUnrelate<Likes>>, _w: DeferredWorld| {
        u.fetch_add(1, Ordering::Relaxed);
    });
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[0], e[2], Likes).unwrap();
    world.relate(e[2], e[1], Likes).unwrap();
    world.unrelate::<Likes>(e[0], e[2]).unwrap();
    world.despawn(e[1]).unwrap(); // two edges go
    assert_eq!(related.load(Ordering::Relaxed), 3);
    assert_eq!(unrelated.load(Ordering::Relaxed), 3);
    world.check_invariants();
}

#[test]
fn clear_drops_every_edge() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Likes).unwrap();
    let v = world.relation_version::<Likes>();
    world.clear();
    assert_ne!(world.relation_version::<Likes>(), v);
    let f = spawn_n(&mut world, 2);
    world.relate(f[0], f[1], Likes).unwrap();
    assert_eq!(world.sources::<Likes>(f[1]), [f[0]]);
    world.check_invariants();
}

#[derive(Debug, Clone)]
enum Op {
    Spawn,
    Parent(usize, usize),
    Unparent(usize),
    Likes(usize, usize),
    Unlike(usize, usize),
    Despawn(usize),
    DespawnRecursive(usize),
    DespawnDescendants(usize),
    Walk(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Spawn),
        4 => (0..64usize, 0..64usize).prop_map(|(a, b)| Op::Parent(a, b)),
        1 => (0..64usize).prop_map(Op::Unparent),
        2 => (0..64usize, 0..64usize).prop_map(|(a, b)| Op::Likes(a, b)),
        1 => (0..64usize, 0..64usize).prop_map(|(a, b)| Op::Unlike(a, b)),
        1 => (0..64usize).prop_map(Op::Despawn),
        1 => (0..64usize).prop_map(Op::DespawnRecursive),
        1 => (0..64usize).prop_map(Op::DespawnDescendants),
        1 => (0..64usize).prop_map(Op::Walk),
    ]
}

/// `root`'s descendants, breadth first, walked by hand (empty if dead).
fn subtree_below(world: &World, root: Entity) -> Vec<Entity> {
    let mut below: Vec<Entity> = world.children(root).to_vec();
    let mut i = 0;
    while i < below.len() {
        below.extend_from_slice(world.children(below[i]));
        i += 1;
    }
    below
}

/// Would making `child` a child of `parent` close a cycle?
fn is_ancestor(world: &World, ancestor: Entity, mut e: Entity) -> bool {
    loop {
        if e == ancestor {
            return true;
        }
        match world.parent(e) {
            Some(p) => e = p,
            None => return false,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 128 },
        // Miri runs with isolation: no regression files (reading them asks
        // for the working directory, which isolation refuses).
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    /// After any sequence of operations on a random forest: no edge names a
    /// dead entity, both sides agree (`check_invariants`), and the cached
    /// parent-first order puts every parent before its children and holds
    /// exactly the entities in the hierarchy.
    #[test]
    fn random_forests_stay_consistent(ops in proptest::collection::vec(op(), 1..120)) {
        let mut world = World::new();
        let mut all: Vec<Entity> = (0..8).map(|_| world.spawn(())).collect();
        let mut order = ParentFirst::<ChildOf>::new();
        for op in ops {
            let pick = |i: usize| all[i % all.len()];
            match op {
                Op::Spawn => all.push(world.spawn(())),
                Op::Parent(a, b) => {
                    let (parent, child) = (pick(a), pick(b));
                    let ok = world.contains(parent) && world.contains(child);
                    if ok && !is_ancestor(&world, child, parent) {
                        world.add_child(parent, child).unwrap();
                        prop_assert_eq!(world.parent(child), Some(parent));
                    } else if ok {
                        // Would close a cycle: refused, nothing changed.
                        let before = world.parent(child);
                        let r = world.add_child(parent, child);
                        prop_assert!(matches!(r, Err(RelationError::Cycle { .. })), "{:?}", r);
                        prop_assert_eq!(world.parent(child), before);
                    } else {
                        prop_assert!(world.add_child(parent, child).is_err());
                    }
                }
                Op::Unparent(a) => { let _ = world.remove_parent(pick(a)); }
                Op::Likes(a, b) => {
                    let r = world.relate(pick(a), pick(b), Likes);
                    prop_assert_eq!(r.is_ok(), world.contains(pick(a)) && world.contains(pick(b)));
                }
                Op::Unlike(a, b) => {
                    let had = world.has_relation::<Likes>(pick(a), pick(b));
                    prop_assert_eq!(world.unrelate::<Likes>(pick(a), pick(b)).is_ok(), had);
                }
                Op::Despawn(a) => { let _ = world.despawn(pick(a)); }
                Op::DespawnRecursive(a) => {
                    let root = pick(a);
                    let was_alive = world.contains(root);
                    let mut subtree = vec![root];
                    let mut i = 0;
                    while was_alive && i < subtree.len() {
                        subtree.extend_from_slice(world.children(subtree[i]));
                        i += 1;
                    }
                    let ok = world.despawn_recursive(root).is_ok();
                    prop_assert_eq!(ok, was_alive);
                    prop_assert!(subtree.iter().all(|&e| !world.contains(e)));
                }
                Op::DespawnDescendants(a) => {
                    let root = pick(a);
                    let was_alive = world.contains(root);
                    let below = subtree_below(&world, root);
                    let ok = world.despawn_descendants(root).is_ok();
                    prop_assert_eq!(ok, was_alive);
                    prop_assert_eq!(world.contains(root), was_alive);
                    prop_assert!(world.children(root).is_empty());
                    prop_assert!(below.iter().all(|&e| !world.contains(e)));
                }
                Op::Walk(a) => {
                    // ancestors, root_ancestor and descendants against
                    // walks by hand.
                    let e = pick(a);
                    let mut up = Vec::new();
                    let mut at = e;
                    while let Some(p) = world.parent(at) {
                        up.push(p);
                        at = p;
                    }
                    prop_assert_eq!(world.ancestors(e).collect::<Vec<_>>(), up);
                    prop_assert_eq!(world.root_ancestor(e), at);
                    let down: Vec<Entity> = world.descendants(e).collect();
                    prop_assert_eq!(&down, &subtree_below(&world, e));
                    for (i, &d) in down.iter().enumerate() {
                        // Each after its parent (breadth first).
                        let p = world.parent(d).unwrap();
                        prop_assert!(p == e || down[..i].contains(&p));
                    }
                }
            }
            world.check_invariants();
            let got = order.get(&world).to_vec();
            for (i, &e) in got.iter().enumerate() {
                prop_assert!(world.contains(e));
                if let Some(p) = world.parent(e) {
                    let pi = got.iter().position(|&x| x == p);
                    prop_assert!(pi.is_some_and(|pi| pi < i), "parent after child");
                }
            }
            let in_hierarchy = all
                .iter()
                .filter(|&&e| world.parent(e).is_some() || !world.children(e).is_empty())
                .count();
            prop_assert_eq!(got.len(), in_hierarchy);
        }
    }
}

#[derive(Relation)]
#[relation(cardinality = "one", on_despawn = "cascade")]
struct Rides;

#[derive(Relation)]
#[relation(cardinality = "many", on_target_despawn = "delete")]
struct Follows;

#[test]
fn derive_options_and_their_spellings() {
    use mosaic::{OnTargetDespawn, Relationship};
    const { assert!(Rides::ONE && !Follows::ONE) };
    assert_eq!(Rides::ON_TARGET_DESPAWN, OnTargetDespawn::Despawn);
    assert_eq!(Follows::ON_TARGET_DESPAWN, OnTargetDespawn::Unrelate);
    const { assert!(OwnedBy::ONE && !Likes::ONE) };
    assert_eq!(DependsOn::ON_TARGET_DESPAWN, OnTargetDespawn::Refuse);
    let mut world = World::new();
    let (horse, a, b) = (world.spawn(()), world.spawn(()), world.spawn(()));
    world.relate(a, horse, Rides).unwrap();
    world.relate(a, b, Rides).unwrap(); // one: replaces
    assert_eq!(world.targets::<Rides>(a), [b]);
    world.relate(horse, a, Follows).unwrap();
    world.relate(horse, b, Follows).unwrap();
    world.despawn(b).unwrap(); // cascades to its rider, a
    assert!(!world.contains(a));
    assert!(world.targets::<Follows>(horse).is_empty());
    world.check_invariants();
}

#[test]
fn child_of_refuses_cycles_and_changes_nothing() {
    let mut world = World::new();
    let [a, b, c, d, other] = spawn_n(&mut world, 5)[..] else {
        unreachable!()
    };
    // a <- b <- c <- d (d is a's great-grandchild).
    world.add_child(a, b).unwrap();
    world.add_child(b, c).unwrap();
    world.add_child(c, d).unwrap();
    world.add_child(other, a).unwrap();
    let version = world.relation_version::<ChildOf>();
    let cycle = |child, parent| RelationError::Cycle {
        entity: child,
        target: parent,
        relation: "ChildOf",
    };
    assert_eq!(world.add_child(a, a), Err(cycle(a, a)));
    assert_eq!(world.set_parent(a, d), Err(cycle(a, d)));
    assert_eq!(world.relate(b, c, ChildOf(c)), Err(cycle(b, c)));
    assert_eq!(world.add_child(d, a), Err(cycle(a, d)));
    // Nothing changed: same parents, same children, same version.
    assert_eq!(world.parent(a), Some(other));
    assert_eq!(world.parent(b), Some(a));
    assert_eq!(world.children(d), [] as [Entity; 0]);
    assert_eq!(world.relation_version::<ChildOf>(), version);
    let message = world.add_child(c, a).unwrap_err().to_string();
    assert!(message.contains("cycle"), "{message}");
    world.check_invariants();

    // Reparenting along the chain is fine when it closes no cycle: d moves
    // up to a, then c (no longer d's ancestor) may become d's child.
    world.add_child(a, d).unwrap();
    world.add_child(d, c).unwrap();
    assert_eq!(world.parent(c), Some(d));
    assert_eq!(world.add_child(c, a), Err(cycle(a, c)));
    // Cut off from its parent, a subtree's root may go under a former
    // descendant of its old ancestors.
    world.remove_parent(a).unwrap();
    world.add_child(c, other).unwrap();
    assert_eq!(world.parent(other), Some(c));
    world.check_invariants();
    let order = world.parent_first::<ChildOf>();
    assert_eq!(order.len(), 5);
}

#[derive(Relation, Debug, PartialEq)]
#[relation(acyclic)]
struct DependsOnBuild;

#[test]
fn acyclic_many_relation_refuses_cycles_others_allow_them() {
    use mosaic::Relationship;
    const { assert!(DependsOnBuild::ACYCLIC && ChildOf::ACYCLIC && !Likes::ACYCLIC) };
    let mut world = World::new();
    let [app, lib, core, util] = spawn_n(&mut world, 4)[..] else {
        unreachable!()
    };
    world.relate(app, lib, DependsOnBuild).unwrap();
    world.relate(app, util, DependsOnBuild).unwrap();
    world.relate(lib, core, DependsOnBuild).unwrap();
    world.relate(util, core, DependsOnBuild).unwrap(); // a diamond, no cycle
    assert!(matches!(
        world.relate(core, app, DependsOnBuild),
        Err(RelationError::Cycle { entity, target, .. }) if entity == core && target == app
    ));
    assert!(world.relate(core, core, DependsOnBuild).is_err());
    assert!(world.targets::<DependsOnBuild>(core).is_empty());
    // Relating an existing edge again is no cycle.
    world.relate(app, lib, DependsOnBuild).unwrap();
    // A relation that is not acyclic takes mutual edges and self-loops.
    world.relate(app, lib, Likes).unwrap();
    world.relate(lib, app, Likes).unwrap();
    world.relate(app, app, Likes).unwrap();
    world.check_invariants();
}

#[test]
fn clone_entity_copies_outgoing_edges_only() {
    let mut world = World::new();
    let parent = world.spawn(Pos(0.0));
    let child = world.spawn_child(parent, Pos(1.0)).unwrap();
    let grandchild = world.spawn_child(child, Pos(2.0)).unwrap();
    let (x, y) = (world.spawn(()), world.spawn(()));
    world.relate(child, x, Damage { amount: 3 }).unwrap();
    world.relate(child, y, Damage { amount: 5 }).unwrap();
    world.relate(x, child, Damage { amount: 7 }).unwrap();
    world.relate(child, x, Likes).unwrap(); // not `Clone`: not copied

    let copy = world.clone_entity(child).unwrap();
    assert_eq!(world.get::<Pos>(copy), Ok(&Pos(1.0)));
    // Outgoing: the same parent (a sibling), the same targets and data.
    assert_eq!(world.parent(copy), Some(parent));
    assert_eq!(world.children(parent).len(), 2);
    assert_eq!(
        world.relation::<Damage>(copy, x),
        Some(&Damage { amount: 3 })
    );
    assert_eq!(
        world.relation::<Damage>(copy, y),
        Some(&Damage { amount: 5 })
    );
    assert!(world.targets::<Likes>(copy).is_empty());
    // Incoming: not duplicated (no children, nothing targets the copy).
    assert!(world.children(copy).is_empty());
    assert_eq!(world.children(child), [grandchild]);
    assert!(world.sources::<Damage>(copy).is_empty());
    assert_eq!(world.sources::<Damage>(child), [x]);
    // The copy's edges are real edges: editing them leaves the original's.
    world.relation_mut::<Damage>(copy, x).unwrap().amount = 9;
    assert_eq!(
        world.relation::<Damage>(child, x),
        Some(&Damage { amount: 3 })
    );
    world.despawn(x).unwrap();
    assert_eq!(world.targets::<Damage>(copy), [y]);
    world.check_invariants();

    // Across worlds edges are not copied (their ends live here).
    let mut other = World::new();
    let far = world.clone_entity_to(child, &mut other).unwrap();
    assert_eq!(other.get::<Pos>(far), Ok(&Pos(1.0)));
    assert_eq!(other.parent(far), None);
    other.check_invariants();
}

#[test]
fn long_lists_stay_indexed_through_edits() {
    // Enough sources that the targets' lists pass the index threshold and
    // come back under it, with relate, unrelate and despawns in any order;
    // `check_invariants` checks every index entry after each step.
    let mut world = World::new();
    let n = if cfg!(miri) { 40 } else { 120 };
    let mut sources = spawn_n(&mut world, n);
    let targets = spawn_n(&mut world, 3);
    let mut rng = Lcg(7);
    for step in 0..(if cfg!(miri) { 150 } else { 2000 }) {
        let s = sources[rng.below(sources.len())];
        let t = targets[rng.below(targets.len())];
        match rng.below(8) {
            0..=4 => world.relate(s, t, Damage { amount: step }).unwrap(),
            5 | 6 => {
                let had = world.has_relation::<Damage>(s, t);
                assert_eq!(world.unrelate::<Damage>(s, t).is_ok(), had);
            }
            _ => {
                world.despawn(s).unwrap();
                let fresh = world.spawn(());
                let i = sources.iter().position(|&x| x == s).unwrap();
                sources[i] = fresh;
            }
        }
        if step % 7 == 0 || cfg!(miri) {
            world.check_invariants();
        }
        assert!(!world.has_relation::<Damage>(s, t) || world.sources::<Damage>(t).contains(&s));
    }
    world.check_invariants();
    // Both sides long: a source with many targets, a target with many
    // sources, and the edge between them found and removed.
    let hub = world.spawn(());
    for &t in &sources {
        world.relate(hub, t, Likes).unwrap();
    }
    let sink = sources[0];
    for &s in &sources[1..] {
        world.relate(s, sink, Likes).unwrap();
    }
    assert!(world.has_relation::<Likes>(hub, sink));
    world.unrelate::<Likes>(hub, sink).unwrap();
    assert!(!world.has_relation::<Likes>(hub, sink));
    assert_eq!(world.sources::<Likes>(sink).len(), sources.len() - 1);
    world.check_invariants();
}

#[test]
fn a_child_an_observer_adds_during_a_recursive_despawn_is_left_a_root() {
    #[derive(Component)]
    struct Replaced;
    let mut world = World::new();
    let root = world.spawn(());
    let kid = world.spawn(Replaced);
    world.add_child(root, kid).unwrap();
    let newcomers = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&newcomers);
    // While the subtree goes, an observer gives the dying root a new child.
    world.observe(
        move |_: Trigger<OnRemove<Replaced>>, mut w: DeferredWorld| {
            let newcomer = w.commands().spawn(());
            w.commands().add_child(root, newcomer);
            seen.lock().unwrap().push(newcomer);
        },
    );
    world.despawn_recursive(root).unwrap();
    // No edge names the dead root; the newcomer, which was not in the
    // subtree when the despawn began, stays, a root.
    world.check_invariants();
    let newcomer = newcomers.lock().unwrap()[0];
    assert!(!world.contains(root) && !world.contains(kid));
    assert!(world.contains(newcomer));
    assert_eq!(world.parent(newcomer), None);
    assert_eq!(world.len(), 1);
}

#[test]
fn ancestors_and_descendants_walk_any_depth() {
    // Deep enough that a recursive walk would be a risk natively; small
    // under Miri, where the walk is the same code.
    let depth = if cfg!(miri) { 50 } else { 100_000 };
    let mut world = World::new();
    let root = world.spawn(());
    let mut chain = vec![root];
    for _ in 0..depth {
        let next = world.spawn_child(*chain.last().unwrap(), ()).unwrap();
        chain.push(next);
    }
    let leaf = *chain.last().unwrap();
    assert_eq!(world.ancestors(leaf).count(), depth);
    assert_eq!(world.root_ancestor(leaf), root);
    assert!(world.descendants(root).eq(chain[1..].iter().copied()));
    // Reparenting is seen at once.
    let other = world.spawn(());
    world.set_parent(chain[1], other).unwrap();
    assert_eq!(world.root_ancestor(leaf), other);
    assert_eq!(world.descendants(root).count(), 0);
    // Dead entities: nothing to walk.
    world.despawn(other).unwrap();
    world.despawn_recursive(chain[1]).unwrap();
    assert_eq!(world.ancestors(leaf).count(), 0);
    assert_eq!(world.descendants(leaf).count(), 0);
    assert_eq!(world.root_ancestor(leaf), leaf);
}

#[test]
fn despawn_descendants_keeps_the_entity_and_cleans_every_edge() {
    let mut world = World::new();
    let keep = world.spawn(Marker);
    let bag = world.spawn_child(keep, ()).unwrap();
    let coin = world.spawn_child(bag, ()).unwrap();
    let sword = world.spawn_child(keep, ()).unwrap();
    let outsider = world.spawn(());
    world.relate(outsider, coin, Likes).unwrap();
    world.relate(keep, sword, Likes).unwrap();
    world.despawn_descendants(keep).unwrap();
    for e in [bag, coin, sword] {
        assert!(!world.contains(e));
    }
    assert!(world.contains(keep) && world.has::<Marker>(keep));
    assert!(world.children(keep).is_empty());
    assert!(world.targets::<Likes>(outsider).is_empty());
    assert!(world.targets::<Likes>(keep).is_empty());
    world.check_invariants();
    // Nothing below: fine, nothing changes.
    world.despawn_descendants(keep).unwrap();
    assert_eq!(world.len(), 2);
    // Dead: an error.
    world.despawn(outsider).unwrap();
    assert_eq!(
        world.despawn_descendants(outsider),
        Err(EntityError::NoSuchEntity(outsider))
    );
}

#[test]
fn despawn_descendants_refused_changes_nothing() {
    let mut world = World::new();
    let keep = world.spawn(());
    let a = world.spawn_child(keep, ()).unwrap();
    let b = world.spawn_child(keep, ()).unwrap();
    let deep = world.spawn_child(b, ()).unwrap();
    let app = world.spawn(());
    world.relate(app, deep, DependsOn).unwrap();
    let err = world.despawn_descendants(keep).unwrap_err();
    assert!(
        matches!(err, EntityError::DespawnRefused { entity, .. } if entity == deep),
        "{err:?}"
    );
    // Every descendant checked before any went: `a` is still there.
    assert_eq!(world.len(), 5);
    assert_eq!(world.children(keep).len(), 2);
    assert_eq!(world.parent(a), Some(keep));
    world.check_invariants();
    // Commands do the same, and report the refusal.
    let mut commands = CommandBuffer::new(&world);
    commands.despawn_descendants(keep);
    assert!(commands.apply(&mut world).is_err());
    assert_eq!(world.len(), 5);
    world.despawn(app).unwrap();
    let mut commands = CommandBuffer::new(&world);
    commands.despawn_descendants(keep);
    commands.apply(&mut world).unwrap();
    assert_eq!(world.len(), 1);
}

/// A value whose drop panics, to stop a despawn half-way.
struct Bomb;
impl Component for Bomb {}
impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("bomb");
        }
    }
}

#[test]
fn despawn_descendants_finishes_every_subtree_before_a_panic() {
    let mut world = World::new();
    let keep = world.spawn(());
    let first = world.spawn_child(keep, Bomb).unwrap();
    let under_first = world.spawn_child(first, ()).unwrap();
    let second = world.spawn_child(keep, ()).unwrap();
    let under_second = world.spawn_child(second, ()).unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.despawn_descendants(keep)
    }));
    assert!(result.is_err(), "the drop's panic is raised");
    for e in [first, under_first, second, under_second] {
        assert!(!world.contains(e), "{e:?} survived");
    }
    assert!(world.contains(keep));
    assert!(world.children(keep).is_empty());
    world.check_invariants();
    // The next call works.
    world.spawn_child(keep, ()).unwrap();
    world.despawn_descendants(keep).unwrap();
    assert_eq!(world.len(), 1);
}

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Tag(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Rare(u32);

/// With no hook or observer, a recursive despawn drops the subtree in one
/// batch (each sparse set in one pass when the subtree is a large share of
/// it). Every survivor keeps its values, ticks and edges; other relations
/// are detached and their policies applied as for one despawn at a time.
#[test]
fn a_batched_recursive_despawn_keeps_every_survivor_whole() {
    let mut world = World::new();
    let mut changed = world.query_filtered::<&Tag, Changed<Tag>>();
    let keep = world.spawn(Tag(1000));
    let root = world.spawn_child(keep, Tag(0)).unwrap();
    let mut doomed = vec![root];
    // A subtree of 40, each with a `Tag` (a large share of its set) and
    // every tenth with a `Rare` (a small share of its set: the outsiders
    // hold most).
    for i in 1..40u32 {
        let parent = doomed[(i as usize - 1) / 3];
        let e = world.spawn_child(parent, Tag(i)).unwrap();
        if i % 10 == 0 {
            world.insert_one(e, Rare(i)).unwrap();
        }
        doomed.push(e);
    }
    // The first 20 outsiders have a `Tag` too: the subtree still holds
    // most of that set (one pass), and few of the `Rare`s (lookups).
    let outsiders: Vec<Entity> = (0..200u32)
        .map(|i| match i < 20 {
            true => world.spawn((Tag(2000 + i), Rare(2000 + i))),
            false => world.spawn(Rare(2000 + i)),
        })
        .collect();
    // Other relations across the boundary, with policies.
    let owned = world.spawn(());
    world.relate(owned, doomed[7], OwnedBy).unwrap();
    world.relate(doomed[3], outsiders[0], Likes).unwrap();
    world.relate(outsiders[1], doomed[5], Likes).unwrap();
    world.relate(outsiders[2], outsiders[3], Likes).unwrap();
    let _ = changed.iter(&world).count();
    world.insert_one(outsiders[9], Tag(9009)).unwrap();

    world.despawn_recursive(root).unwrap();

    world.check_invariants();
    assert!(doomed.iter().all(|&e| !world.contains(e)));
    assert!(
        !world.contains(owned),
        "its owner went: the policy despawns it"
    );
    assert!(world.children(keep).is_empty());
    assert_eq!(world.get::<Tag>(keep).ok(), Some(&Tag(1000)));
    for (i, &o) in outsiders.iter().enumerate() {
        let tag = match i {
            9 => Some(Tag(9009)),
            0..20 => Some(Tag(2000 + i as u32)),
            _ => None,
        };
        assert_eq!(world.get::<Tag>(o).ok(), tag.as_ref());
        assert_eq!(world.get::<Rare>(o).ok(), Some(&Rare(2000 + i as u32)));
    }
    assert!(world.targets::<Likes>(outsiders[1]).is_empty());
    assert!(world.sources::<Likes>(outsiders[0]).is_empty());
    assert_eq!(world.targets::<Likes>(outsiders[2]), [outsiders[3]]);
    // Ticks moved with their values: only the replaced one changed.
    let fresh: Vec<u32> = changed.iter(&world).map(|t| t.0).collect();
    assert_eq!(fresh, [9009]);
    let mut tags: Vec<u32> = world.query::<&Tag>().iter(&world).map(|t| t.0).collect();
    tags.sort_unstable();
    assert_eq!(tags.len(), 21);
    assert_eq!(world.query::<&Rare>().iter(&world).count(), 200);
}

// ----- one sweep (issue 39) ---------------------------------------------------------

/// Item 9: an observer that plain-despawns a sibling while
/// `despawn_descendants` runs does not orphan the sibling's children: the
/// doomed set is decided first and goes whole, the observer's command
/// finding its target gone.
#[test]
fn despawn_descendants_is_one_sweep_whatever_observers_do() {
    #[derive(Component)]
    struct Trigger1;
    let mut world = World::new();
    let keep = world.spawn(());
    let first = world.spawn_child(keep, Trigger1).unwrap();
    let second = world.spawn_child(keep, ()).unwrap();
    let grandkids: Vec<Entity> = (0..3)
        .map(|_| world.spawn_child(second, ()).unwrap())
        .collect();
    world.observe(
        move |_: Trigger<OnRemove<Trigger1>>, mut w: DeferredWorld| {
            w.commands().despawn(second);
        },
    );
    world.despawn_descendants(keep).unwrap();
    for e in [first, second].iter().chain(&grandkids) {
        assert!(!world.contains(*e), "{e:?} survived");
    }
    assert_eq!(world.len(), 1);
    assert!(world.children(keep).is_empty());
    world.check_invariants();
}

/// Item 10: a panicking `OnUnrelate<ChildOf>` observer does not stop a
/// recursive despawn of a subtree below a parent: all 101 go, the parent
/// stays, then the first panic is raised.
#[test]
fn a_panicking_unrelate_observer_does_not_keep_the_subtree() {
    let mut world = World::new();
    let keep = world.spawn(());
    let root = world.spawn_child(keep, ()).unwrap();
    let mut subtree = vec![root];
    for i in 0..100 {
        let parent = subtree[i / 2];
        subtree.push(world.spawn_child(parent, ()).unwrap());
    }
    let heard = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&heard);
    world.observe(move |_: Trigger<OnUnrelate<ChildOf>>, _: DeferredWorld| {
        h.fetch_add(1, Ordering::Relaxed);
        panic!("grief");
    });
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.despawn_recursive(root)
    }));
    let payload = result.expect_err("the observer's panic is raised");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"grief"));
    let alive = subtree.iter().filter(|&&e| world.contains(e)).count();
    assert_eq!(alive, 0, "{alive} of 101 survived");
    assert!(world.contains(keep) && world.children(keep).is_empty());
    // Every edge that went was heard (100 inside, 1 to `keep`).
    assert_eq!(heard.load(Ordering::Relaxed), 101);
    world.check_invariants();
}

/// Item 11: X owns A and B, B depends on A (refuse). Despawning X gives
/// the same world whichever ownership edge was made first: the doomed set
/// is decided on the graph, and B, doomed itself, does not keep A.
#[test]
fn a_cascade_does_not_depend_on_edge_creation_order() {
    for a_first in [true, false] {
        let mut world = World::new();
        let e = spawn_n(&mut world, 4);
        let (x, a, b, other) = (e[0], e[1], e[2], e[3]);
        world.relate(b, a, DependsOn).unwrap();
        if a_first {
            world.relate(a, x, OwnedBy).unwrap();
            world.relate(b, x, OwnedBy).unwrap();
        } else {
            world.relate(b, x, OwnedBy).unwrap();
            world.relate(a, x, OwnedBy).unwrap();
        }
        world.despawn(x).unwrap();
        assert!(
            !world.contains(a) && !world.contains(b),
            "a_first = {a_first}: a alive {}, b alive {}",
            world.contains(a),
            world.contains(b)
        );
        assert!(world.contains(other));
        world.check_invariants();
    }
    // A survivor outside the doomed set still keeps what it depends on,
    // in either order, and what that one owns.
    for a_first in [true, false] {
        let mut world = World::new();
        let e = spawn_n(&mut world, 5);
        let (x, a, b, outsider, under_a) = (e[0], e[1], e[2], e[3], e[4]);
        world.relate(outsider, a, DependsOn).unwrap();
        world.relate(under_a, a, OwnedBy).unwrap();
        if a_first {
            world.relate(a, x, OwnedBy).unwrap();
            world.relate(b, x, OwnedBy).unwrap();
        } else {
            world.relate(b, x, OwnedBy).unwrap();
            world.relate(a, x, OwnedBy).unwrap();
        }
        world.despawn(x).unwrap();
        assert!(world.contains(a) && world.contains(under_a) && !world.contains(b));
        assert_eq!(world.targets::<OwnedBy>(a), []);
        world.check_invariants();
    }
}

/// Item 14: the cycle check of a `one` relation walks up from the new
/// parent and down from the child in turn, so a chain linked in any order
/// (here every other link first, as a scene loader relating one archetype
/// and then the other does) costs O(1) a link; it still finds every cycle,
/// whichever walk meets the other end first.
#[test]
fn the_lockstep_cycle_check_finds_every_cycle_in_any_link_order() {
    let n = 64;
    let mut world = World::new();
    let chain = spawn_n(&mut world, n);
    for start in [1, 2] {
        for i in (start..n).step_by(2) {
            world.add_child(chain[i - 1], chain[i]).unwrap();
        }
    }
    world.check_invariants();
    assert_eq!(world.ancestors(chain[n - 1]).count(), n - 1);
    // Every ancestor of every entity is refused as its child, changing
    // nothing: deep ancestors (the walk down meets them) and near ones.
    for i in (0..n).step_by(7) {
        for j in (i..n).step_by(5) {
            let err = world.add_child(chain[j], chain[i]).unwrap_err();
            assert!(matches!(err, RelationError::Cycle { .. }), "{i} under {j}");
        }
    }
    assert_eq!(world.parent(chain[0]), None);
    // A branch off the middle: moving the chain's top under it is a cycle;
    // moving the branch under the top is not.
    let branch = world.spawn_child(chain[n / 2], ()).unwrap();
    let twig = world.spawn_child(branch, ()).unwrap();
    assert!(matches!(
        world.add_child(twig, chain[1]),
        Err(RelationError::Cycle { .. })
    ));
    world.add_child(chain[0], branch).unwrap();
    assert_eq!(
        world.ancestors(twig).collect::<Vec<_>>(),
        [branch, chain[0]]
    );
    // Two trees joined either way round.
    let other = spawn_n(&mut world, 3);
    world.add_child(other[0], other[1]).unwrap();
    world.add_child(other[1], other[2]).unwrap();
    world.add_child(other[2], chain[0]).unwrap();
    assert!(matches!(
        world.add_child(chain[n - 1], other[0]),
        Err(RelationError::Cycle { .. })
    ));
    world.check_invariants();
}

/// `sort_children_by_key` / `sort_sources_by_key` reorder a target's list
/// and keep every back index right: removals after the sort fix the moved
/// entries (a `one` relation's, and a long indexed many-target list's).
#[test]
fn sorting_sources_keeps_both_ends_in_step() {
    let mut world = World::new();
    let parent = world.spawn(());
    let kids: Vec<Entity> = (0..6)
        .map(|_| world.spawn_child(parent, ()).unwrap())
        .collect();
    let rank = |k: Entity| std::cmp::Reverse(k);
    world.sort_children_by_key(parent, rank).unwrap();
    let mut want = kids.clone();
    want.reverse();
    assert_eq!(world.children(parent), want);
    world.check_invariants();
    world.remove_parent(kids[4]).unwrap();
    world.despawn(kids[2]).unwrap();
    world.check_invariants();
    let star = world.spawn(());
    let fans = spawn_n(&mut world, 40);
    for &f in &fans {
        world.relate(f, star, Likes).unwrap();
        world.relate(f, parent, Likes).unwrap();
    }
    world.sort_sources_by_key::<Likes, _>(star, rank).unwrap();
    let mut want = fans.clone();
    want.reverse();
    assert_eq!(world.sources::<Likes>(star), want);
    world.check_invariants();
    for &f in fans.iter().step_by(3) {
        world.unrelate::<Likes>(f, star).unwrap();
        assert!(!world.has_relation::<Likes>(f, star));
    }
    assert!(world.has_relation::<Likes>(fans[1], star));
    world.check_invariants();
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    assert_eq!(
        world.sort_children_by_key(gone, rank),
        Err(RelationError::NoSuchEntity(gone))
    );
}

/// Issue 39, item 11: one graph, one outcome. X has A and B (as children,
/// or as owned entities), and B pins A (`DependsOn`, refuse). A cascade
/// (`OwnedBy`, despawn) dooms A and B together, so B's pin keeps nothing
/// and both go; `despawn_recursive` over the same shape must decide the
/// same, in either order of making the edges. A pin from outside the
/// doomed set still refuses, changing nothing.
#[test]
fn a_pin_inside_the_doomed_set_refuses_neither_sweep() {
    for a_first in [true, false] {
        // The cascade.
        let mut world = World::new();
        let [x, a, b] = spawn_n(&mut world, 3)[..] else {
            unreachable!()
        };
        let owned = if a_first { [a, b] } else { [b, a] };
        for e in owned {
            world.relate(e, x, OwnedBy).unwrap();
        }
        world.relate(b, a, DependsOn).unwrap();
        world.despawn(x).unwrap();
        assert!(
            !world.contains(a) && !world.contains(b),
            "cascade, a_first {a_first}"
        );
        world.check_invariants();

        // The hierarchy: the same shape through `ChildOf`.
        let mut world = World::new();
        let [x, a, b] = spawn_n(&mut world, 3)[..] else {
            unreachable!()
        };
        let children = if a_first { [a, b] } else { [b, a] };
        for c in children {
            world.add_child(x, c).unwrap();
        }
        world.relate(b, a, DependsOn).unwrap();
        world.despawn_recursive(x).unwrap();
        assert!(
            !world.contains(x) && !world.contains(a) && !world.contains(b),
            "recursive, a_first {a_first}"
        );
        world.check_invariants();

        // A pin from outside the subtree refuses it, whole.
        let mut world = World::new();
        let [x, a, b, outside] = spawn_n(&mut world, 4)[..] else {
            unreachable!()
        };
        world.add_child(x, a).unwrap();
        world.add_child(x, b).unwrap();
        world.relate(outside, a, DependsOn).unwrap();
        assert_eq!(
            world.despawn_recursive(x),
            Err(EntityError::DespawnRefused {
                entity: a,
                relation: "DependsOn"
            })
        );
        assert!(world.contains(x) && world.contains(a) && world.contains(b));
        world.check_invariants();
    }
}

/// One refuse rule for every despawn (the cascade's, `decide_doomed`):
/// the doomed set is what the despawn names (an entity, a subtree) plus
/// the sources its relations' `Despawn` policies doom in turn, and only a
/// pin from outside that whole set keeps an entity. C is X's child; S is
/// owned by C (it goes with C) and pins C. `despawn(C)`,
/// `despawn_recursive(X)` and a cascade from an owner of C all take S
/// along, so S's pin keeps nothing: all three go through. (Before, the
/// plain despawn and the recursive one counted S as a survivor, S being
/// outside the named set, and refused.) A pin on S from outside keeps S,
/// and S, surviving, keeps C: then each of them is refused, changing
/// nothing.
#[test]
fn a_pin_from_a_source_the_despawn_dooms_keeps_nothing_on_any_path() {
    // (world, x, c, s): x --parent of--> c, s OwnedBy c, s DependsOn c.
    let shape = |owner_instead_of_parent: bool| {
        let mut world = World::new();
        let [x, c, s] = spawn_n(&mut world, 3)[..] else {
            unreachable!()
        };
        if owner_instead_of_parent {
            world.relate(c, x, OwnedBy).unwrap();
        } else {
            world.add_child(x, c).unwrap();
        }
        world.relate(s, c, OwnedBy).unwrap();
        world.relate(s, c, DependsOn).unwrap();
        (world, x, c, s)
    };
    type Despawn = fn(&mut World, Entity, Entity) -> Result<(), EntityError>;
    let paths: [(&str, bool, Despawn); 4] = [
        ("despawn(c)", false, |w, _, c| w.despawn(c)),
        ("despawn_recursive(x)", false, |w, x, _| {
            w.despawn_recursive(x)
        }),
        ("despawn_descendants(x)", false, |w, x, _| {
            w.despawn_descendants(x)
        }),
        ("cascade from x", true, |w, x, _| w.despawn(x)),
    ];
    for (name, owner, despawn) in paths {
        let (mut world, x, c, s) = shape(owner);
        let keep = world.spawn(());
        despawn(&mut world, x, c).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!world.contains(c) && !world.contains(s), "{name}");
        assert!(world.contains(keep), "{name}");
        world.check_invariants();

        // An outsider pins S: S survives, and its pin keeps C.
        let (mut world, x, c, s) = shape(owner);
        let outsider = world.spawn(());
        world.relate(outsider, s, DependsOn).unwrap();
        let result = despawn(&mut world, x, c);
        if owner {
            // The cascade keeps what a survivor pins, and goes on.
            assert_eq!(result, Ok(()), "{name}");
            assert!(!world.contains(x), "{name}");
        } else {
            assert_eq!(
                result,
                Err(EntityError::DespawnRefused {
                    entity: c,
                    relation: "DependsOn"
                }),
                "{name}"
            );
            assert!(world.contains(x), "{name}");
        }
        assert!(world.contains(c) && world.contains(s), "{name}");
        assert_eq!(world.targets::<DependsOn>(s), [c], "{name}");
        world.check_invariants();
    }
}
