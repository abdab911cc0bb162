//! `Disabled`: every query form skips a disabled entity unless the query
//! names the marker, and disabling moves no data.

use std::collections::BTreeSet;
use std::sync::Mutex;

use mosaic::prelude::*;
use mosaic::{Disabled, SparseMutError};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(u32);

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(u32);

#[derive(Component, Debug, Clone, Copy, PartialEq)]
#[component(storage = "sparse")]
struct Tag(u32);

fn ids(world: &mut World) -> Vec<u32> {
    let mut q = world.query::<&Pos>();
    q.iter(world).map(|p| p.0).collect()
}

/// `n` entities `Pos(i)`, every `k`th disabled (`i % k == 0`).
fn world_with(n: u32, k: u32) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let all = world.spawn_batch((0..n).map(|i| (Pos(i), Vel(1))));
    for (i, &e) in all.iter().enumerate() {
        if i as u32 % k == 0 {
            world.insert_one(e, Disabled).unwrap();
        }
    }
    world.check_invariants();
    (world, all)
}

fn enabled(n: u32, k: u32) -> Vec<u32> {
    (0..n).filter(|i| i % k != 0).collect()
}

#[test]
fn every_iteration_form_skips_disabled_entities() {
    let (mut world, _) = world_with(300, 7);
    let want = enabled(300, 7);
    assert_eq!(ids(&mut world), want);

    let mut q = world.query::<&Pos>();
    let mut folded = Vec::new();
    q.iter(&world).for_each(|p| folded.push(p.0));
    assert_eq!(folded, want);
    assert_eq!(q.iter(&world).count(), want.len());
    assert_eq!(
        q.iter(&world).map(|p| u64::from(p.0)).sum::<u64>(),
        want.iter().map(|&i| u64::from(i)).sum::<u64>()
    );

    let mut m = world.query::<(&mut Pos, &Vel)>();
    for (p, v) in m.iter_mut(&mut world) {
        p.0 += 1000 * v.0;
    }
    m.iter_mut(&mut world).for_each(|(p, _)| p.0 += 1000);
    let mut all = world.query::<(&Pos, Has<Disabled>)>();
    for (p, off) in all.iter(&world) {
        let base = p.0 % 1000;
        let want_bumped = if off { base } else { base + 2000 };
        assert_eq!(p.0, want_bumped, "{p:?} disabled={off}");
        assert_eq!(off, base % 7 == 0);
    }

    // In a system.
    let seen = world.run_system_once(|q: Query<&Pos>| q.iter().count());
    assert_eq!(seen, want.len());
}

#[test]
fn get_and_get_mut_refuse_a_disabled_entity() {
    let (mut world, all) = world_with(10, 2);
    let mut q = world.query::<&Pos>();
    assert!(q.get(&world, all[0]).is_err());
    assert_eq!(q.get(&world, all[1]).unwrap(), &Pos(1));
    let mut m = world.query::<&mut Pos>();
    assert!(matches!(
        m.get_mut(&mut world, all[2]),
        Err(QueryEntityError::QueryDoesNotMatch { .. })
    ));
    assert!(m.get_mut(&mut world, all[3]).is_ok());
    // Direct access still sees the components.
    assert_eq!(world.get::<Pos>(all[0]), Ok(&Pos(0)));
    let seen =
        world.run_system_once(move |q: Query<&Pos>| (q.get(all[0]).is_ok(), q.get(all[1]).is_ok()));
    assert_eq!(seen, (false, true));
}

#[test]
fn a_query_that_names_disabled_sees_every_entity() {
    let (mut world, _) = world_with(20, 4);
    let mut with = world.query_filtered::<&Pos, With<Disabled>>();
    assert_eq!(
        with.iter(&world).map(|p| p.0).collect::<Vec<_>>(),
        [0, 4, 8, 12, 16]
    );
    let mut has = world.query::<(&Pos, Has<Disabled>)>();
    assert_eq!(has.iter(&world).count(), 20);
    assert_eq!(has.iter(&world).filter(|(_, d)| *d).count(), 5);
    let mut read = world.query::<(&Pos, &Disabled)>();
    assert_eq!(read.iter(&world).count(), 5);
    let mut opt = world.query::<(&Pos, Option<&Disabled>)>();
    assert_eq!(opt.iter(&world).count(), 20);
    let mut without = world.query_filtered::<&Pos, Without<Disabled>>();
    assert_eq!(without.iter(&world).count(), 15);
    let mut or = world.query_filtered::<&Pos, Or<(With<Disabled>, With<Vel>)>>();
    assert_eq!(or.iter(&world).count(), 20);
}

#[test]
fn disabling_and_enabling_move_no_data() {
    let mut world = World::new();
    let all = world.spawn_batch((0..50).map(|i| (Pos(i), Vel(i))));
    // Register the marker so its registration is not counted below.
    world.register_component::<Disabled>();
    let archetypes = world.archetype_count();
    let before: Vec<_> = all.iter().map(|&e| world.location(e).unwrap()).collect();
    for &e in all.iter().step_by(3) {
        world.insert_one(e, Disabled).unwrap();
    }
    assert_eq!(world.archetype_count(), archetypes);
    let after: Vec<_> = all.iter().map(|&e| world.location(e).unwrap()).collect();
    assert_eq!(before, after, "no entity changed table or row");
    for &e in all.iter().step_by(3) {
        world.remove_one::<Disabled>(e).unwrap();
    }
    assert_eq!(world.archetype_count(), archetypes);
    assert_eq!(ids(&mut world), (0..50).collect::<Vec<_>>());
    world.check_invariants();
}

#[test]
fn par_iter_and_par_chunks_skip_disabled_entities() {
    let (mut world, _) = world_with(2000, 10);
    let want: BTreeSet<u32> = enabled(2000, 10).into_iter().collect();
    let mut q = world.query::<&Pos>();
    let seen = Mutex::new(BTreeSet::new());
    q.par_iter(&world).for_each(|p| {
        assert!(seen.lock().unwrap().insert(p.0));
    });
    assert_eq!(seen.into_inner().unwrap(), want);

    let mut m = world.query::<&mut Pos>();
    m.par_iter_mut(&mut world).for_each(|p| p.0 += 10_000);
    let mut all = world.query::<(&Pos, Has<Disabled>)>();
    assert!(all.iter(&world).all(|(p, off)| (p.0 >= 10_000) != off));

    let chunked = world.run_system_once(|q: Query<&Pos>| {
        q.par_chunks(64)
            .map(|c| c.map(|p| p.0 % 10_000).collect::<Vec<_>>())
            .into_iter()
            .flatten()
            .collect::<BTreeSet<_>>()
    });
    assert_eq!(chunked, want);
}

#[test]
fn sparse_walks_skip_disabled_entities() {
    let mut world = World::new();
    let all = world.spawn_batch((0..200).map(Pos));
    // A few tagged: queries for the tag walk its set.
    for &e in all.iter().step_by(20) {
        world
            .insert_one(e, Tag(world.get::<Pos>(e).unwrap().0))
            .unwrap();
    }
    world.insert_one(all[40], Disabled).unwrap();
    world.insert_one(all[41], Disabled).unwrap();
    let want: Vec<u32> = (0..200).step_by(20).filter(|&i| i != 40).collect();

    // Driven: a table component plus the rare sparse one.
    let mut q = world.query::<(&Pos, &Tag)>();
    assert_eq!(q.iter(&world).map(|(p, _)| p.0).collect::<Vec<_>>(), want);
    let mut folded = Vec::new();
    q.iter(&world).for_each(|(p, _)| folded.push(p.0));
    assert_eq!(folded, want);
    // Dense: sparse data alone.
    let mut dense = world.query::<&Tag>();
    assert_eq!(dense.iter(&world).map(|t| t.0).collect::<Vec<_>>(), want);
    let mut folded = Vec::new();
    dense.iter(&world).for_each(|t| folded.push(t.0));
    assert_eq!(folded, want);
    let mut with_entity = world.query::<(Entity, &Tag)>();
    assert!(with_entity.iter(&world).all(|(e, _)| e != all[40]));
    // Filtered by the sparse component.
    let mut filtered = world.query_filtered::<&Pos, With<Tag>>();
    assert_eq!(filtered.iter(&world).count(), want.len());
    // Once nothing is disabled, the dense walk is back.
    world.remove_one::<Disabled>(all[40]).unwrap();
    world.remove_one::<Disabled>(all[41]).unwrap();
    assert_eq!(dense.iter(&world).count(), 10);
}

#[test]
fn added_and_changed_skip_disabled_entities() {
    let mut world = World::new();
    let mut added = world.query_filtered::<&Pos, Added<Pos>>();
    let mut changed = world.query_filtered::<&Pos, Changed<Pos>>();
    let all = world.spawn_batch((0..10).map(Pos));
    world.insert_one(all[3], Disabled).unwrap();
    assert_eq!(added.iter(&world).count(), 9);
    assert_eq!(changed.iter(&world).count(), 9);
    world.get_mut::<Pos>(all[3]).unwrap().0 = 99;
    world.get_mut::<Pos>(all[4]).unwrap().0 = 98;
    assert_eq!(changed.iter(&world).map(|p| p.0).collect::<Vec<_>>(), [98]);
    // A disabled entity's rows are not stamped by a mutable walk.
    let mut m = world.query::<&mut Pos>();
    m.iter_mut(&mut world).for_each(|_| {});
    let mut changed_all = world.query_filtered::<(Entity, Has<Disabled>), Changed<Pos>>();
    let _ = changed_all.iter(&world).count();
    m.iter_mut(&mut world).for_each(|_| {});
    assert!(changed_all.iter(&world).all(|(_, off)| !off));
}

#[test]
fn the_mark_follows_the_entity_through_moves_and_removals() {
    let mut world = World::new();
    let all = world.spawn_batch((0..40).map(Pos));
    let off = all[5];
    world.insert_one(off, Disabled).unwrap();
    // Swap removals in its table move it to another row.
    for &e in &all[..5] {
        world.despawn(e).unwrap();
    }
    world.check_invariants();
    // An insert moves it to another table.
    world.insert_one(off, Vel(1)).unwrap();
    world.check_invariants();
    // And a removal moves it back.
    world.remove_one::<Vel>(off).unwrap();
    world.check_invariants();
    assert_eq!(ids(&mut world).len(), 34);
    assert!(!ids(&mut world).contains(&5));
    // Sorting reorders the rows.
    world.sort_by_key::<Pos, _>(|p| std::cmp::Reverse(p.0));
    world.check_invariants();
    assert_eq!(ids(&mut world), (6..40).rev().collect::<Vec<_>>());
    // Despawning it clears its row.
    world.despawn(off).unwrap();
    world.check_invariants();
    assert_eq!(world.disabled_count(), 0);
    assert_eq!(ids(&mut world).len(), 34);
}

#[test]
fn spawning_disabled_and_other_entry_points() {
    let mut world = World::new();
    let a = world.spawn((Pos(1), Disabled));
    let batch = world.spawn_batch((0..5).map(|i| (Pos(10 + i), Disabled)));
    world.spawn(Pos(2));
    world.check_invariants();
    assert_eq!(ids(&mut world), [2]);
    assert!(world.is_disabled(a) && world.is_disabled(batch[4]));
    assert_eq!(world.disabled_count(), 6);

    // Through the entity handle and commands.
    world.entity_mut(a).unwrap().remove::<Disabled>().unwrap();
    let b = batch[0];
    world.run_system_once(move |mut commands: Commands| {
        commands.remove::<Disabled>(b);
    });
    world.check_invariants();
    assert_eq!(ids(&mut world), [1, 10, 2]);

    // Insert as part of a bundle with a table component.
    world.insert(a, (Vel(0), Disabled)).unwrap();
    world.check_invariants();
    // `a` left its table; the last row (`Pos(2)`) took its place.
    assert_eq!(ids(&mut world), [2, 10]);

    // The set view refuses the marker: it cannot keep the mirror.
    assert!(matches!(
        world.sparse_mut::<Disabled>(),
        Err(SparseMutError::Disabling(_))
    ));

    world.clear();
    world.check_invariants();
    assert_eq!(world.disabled_count(), 0);
    world.spawn(Pos(7));
    assert_eq!(ids(&mut world), [7]);
}

#[test]
fn disabled_rows_at_table_edges_and_whole_tables() {
    // Bit words: rows around 63/64/127/128, the first and the last row, and
    // a table entirely disabled next to one that is not.
    let mut world = World::new();
    let all = world.spawn_batch((0..200).map(Pos));
    let off = [0usize, 62, 63, 64, 65, 127, 128, 199];
    for &i in &off {
        world.insert_one(all[i], Disabled).unwrap();
    }
    let whole = world.spawn_batch((1000..1003).map(|i| (Pos(i), Vel(0))));
    for &e in &whole {
        world.insert_one(e, Disabled).unwrap();
    }
    world.spawn((Pos(2000), Vel(0), Tag(0)));
    let want: Vec<u32> = (0..200)
        .filter(|i| !off.contains(&(*i as usize)))
        .chain([2000])
        .collect();
    assert_eq!(ids(&mut world), want);
    let mut q = world.query::<&Pos>();
    let mut folded = Vec::new();
    q.iter(&world).for_each(|p| folded.push(p.0));
    assert_eq!(folded, want);
    let mut iter = q.iter(&world);
    // Not exact while rows are skipped, and never below what is left.
    let (low, high) = iter.size_hint();
    assert!(low <= want.len() && high.unwrap() >= want.len());
    assert_eq!(iter.by_ref().take(3).count(), 3);
    assert_eq!(iter.count(), want.len() - 3);
}

/// A tiny model: random disables, enables, moves and despawns, checked
/// against a plain set after every step.
#[test]
fn random_operations_agree_with_a_model() {
    let mut world = World::new();
    let mut live: Vec<Entity> = world.spawn_batch((0..64).map(Pos));
    let mut off: BTreeSet<Entity> = BTreeSet::new();
    let mut seed = 0x2545_f491_u64;
    let mut rand = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    // Under Miri 30 steps (80 s of Miri time at 60): this seed's first 30
    // steps already take every branch the first 60 take (disable, disable
    // again, removing a `Disabled` the entity lacks, Vel in and out,
    // despawn and respawn, Tag); steps 30 to 59 only repeat them.
    let steps = if cfg!(miri) { 30 } else { 600 };
    for step in 0..steps {
        let e = live[rand(live.len())];
        match rand(6) {
            0 => {
                world.insert_one(e, Disabled).unwrap();
                off.insert(e);
            }
            1 => {
                let _ = world.remove_one::<Disabled>(e);
                off.remove(&e);
            }
            2 => world.insert_one(e, Vel(step)).unwrap(),
            3 => {
                let _ = world.remove_one::<Vel>(e);
            }
            4 => {
                world.despawn(e).unwrap();
                live.retain(|&x| x != e);
                off.remove(&e);
                live.push(world.spawn(Pos(step)));
            }
            _ => world.insert_one(e, Tag(step)).unwrap(),
        }
        world.check_invariants();
        let mut q = world.query::<Entity>();
        let seen: BTreeSet<Entity> = q.iter(&world).collect();
        let want: BTreeSet<Entity> = live.iter().copied().filter(|e| !off.contains(e)).collect();
        assert_eq!(seen, want, "step {step}");
        let mut folded = BTreeSet::new();
        q.iter(&world).for_each(|e| {
            folded.insert(e);
        });
        assert_eq!(folded, want, "step {step}");
    }
}

/// `for_each` walks a table in runs between its disabled rows: rows at the
/// table's ends, side by side, and on both sides of a 64-row word edge,
/// in a world that tracks changes to the walked component and one that
/// does not (each takes its own copy of the loop).
#[test]
fn for_each_walks_the_runs_between_disabled_rows_at_every_edge() {
    let off_rows = [0usize, 1, 2, 40, 63, 64, 65, 127, 128, 199];
    for tracked in [false, true] {
        let mut world = World::new();
        let mut changed = tracked.then(|| world.query_filtered::<&Pos, Changed<Pos>>());
        let mut off_changed =
            tracked.then(|| world.query_filtered::<&Pos, (Changed<Pos>, With<Disabled>)>());
        let all = world.spawn_batch((0..200).map(Pos));
        // A second table, whose rows are all enabled, after the split one.
        world.spawn_batch((200..210).map(|i| (Pos(i), Vel(0))));
        for &row in &off_rows {
            world.insert_one(all[row], Disabled).unwrap();
        }
        if let (Some(changed), Some(off_changed)) = (changed.as_mut(), off_changed.as_mut()) {
            // Mark everything seen, so only the walk below stamps rows.
            assert_eq!(changed.iter(&world).count(), 200);
            assert_eq!(off_changed.iter(&world).count(), off_rows.len());
        }
        let want: Vec<u32> = (0..210)
            .filter(|&i| !off_rows.contains(&(i as usize)))
            .collect();

        let mut seen = Vec::new();
        let mut m = world.query::<&mut Pos>();
        m.iter_mut(&mut world).for_each(|p| seen.push(p.0));
        assert_eq!(seen, want, "tracked: {tracked}");
        // Every adaptor built on `fold` takes the same walk.
        assert_eq!(m.iter_mut(&mut world).count(), want.len());
        let sum: u64 = m.iter_mut(&mut world).map(|p| u64::from(p.0)).sum();
        assert_eq!(sum, want.iter().map(|&i| u64::from(i)).sum::<u64>());

        if let (Some(changed), Some(off_changed)) = (changed.as_mut(), off_changed.as_mut()) {
            // The walk stamped exactly the rows it yielded.
            let mut stamped: Vec<u32> = changed.iter(&world).map(|p| p.0).collect();
            stamped.sort_unstable();
            assert_eq!(stamped, want);
            assert_eq!(off_changed.iter(&world).count(), 0);
        }
    }
}

/// Issue #39, item 3, and the rule around it: every direct access by id
/// sees a disabled entity, as `World::get_mut` does.
#[test]
fn direct_access_by_id_sees_disabled_entities() {
    let mut world = World::new();
    let a = world.spawn((Pos(1), Tag(1)));
    let b = world.spawn((Pos(2), Tag(2)));
    world.insert_one(a, Disabled).unwrap();

    let [pa, pb] = world.get_many_mut::<Pos, 2>([a, b]).unwrap();
    pa.0 += 10;
    pb.0 += 10;
    let [ta] = world.get_many_mut::<Tag, 1>([a]).unwrap();
    ta.0 = 7;
    assert_eq!(world.get::<Pos>(a), Ok(&Pos(11)));
    assert_eq!(world.get::<Tag>(a), Ok(&Tag(7)));
    // The marker itself, by id.
    assert!(world.get_many_mut::<Disabled, 1>([a]).is_ok());
    // Still an error for a component the entity lacks, naming the call's
    // query as before.
    assert_eq!(
        world.get_many_mut::<Vel, 1>([a]).unwrap_err(),
        QueryEntityError::QueryDoesNotMatch {
            entity: a,
            query: "&mut Vel".to_owned()
        }
    );
    assert!(matches!(
        world.get_many_mut::<Pos, 2>([a, a]),
        Err(QueryEntityError::AliasedMutability(_))
    ));

    // Entity views and observers' world, by id.
    assert_eq!(world.entity(a).unwrap().get::<Pos>(), Ok(&Pos(11)));
    world.entity_mut(a).unwrap().get_mut::<Pos>().unwrap().0 = 13;
    assert!(world.entity(a).unwrap().has::<Disabled>());
    assert_eq!(world.iter().filter(|e| e.id() == a).count(), 1);
    assert_eq!(world.get::<Pos>(a), Ok(&Pos(13)));
    // A default query still skips it (only `b`'s 12).
    assert_eq!(ids(&mut world), [12]);
    // A copy is disabled too.
    let copy = world.clone_entity(a).unwrap();
    assert!(world.has::<Disabled>(copy));
    assert_eq!(ids(&mut world), [12]);
    world.check_invariants();
}

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Big(u64);

#[derive(Component, Debug, Clone, Copy, PartialEq)]
#[component(storage = "sparse")]
struct Note(u8);

/// Spawning or inserting it disables the entity: it requires the marker.
#[derive(Component, Debug, Clone, Copy, PartialEq, Default)]
#[require(Disabled)]
struct Dormant;

/// The world's mirror, `is_disabled` and a default query all agree that
/// exactly `off` (of `all`) is disabled.
fn agrees(world: &mut World, all: &[Entity], off: &BTreeSet<Entity>, step: &str) {
    world.check_invariants();
    for &e in all {
        assert_eq!(world.is_disabled(e), off.contains(&e), "{step}: {e:?}");
    }
    let mut q = world.query::<Entity>();
    let seen: BTreeSet<Entity> = q.iter(world).filter(|e| all.contains(e)).collect();
    let want: BTreeSet<Entity> = all.iter().copied().filter(|e| !off.contains(e)).collect();
    assert_eq!(seen, want, "{step}");
    assert_eq!(world.disabled_count(), off.len(), "{step}");
}

/// Inserts and removals of other components leave an entity's disabled
/// state as it was (the row move carries it), and a bundle holding the
/// marker sets or clears it, through every entry point that writes a
/// bundle. (Only a bundle holding the marker updates the mirror, so this
/// is what keeps that shortcut honest.)
#[test]
fn other_components_keep_the_state_and_bundles_with_the_marker_change_it() {
    let mut world = World::new();
    let all = world.spawn_batch((0..8).map(|i| (Pos(i), Vel(i))));
    let mut off = BTreeSet::new();
    for &e in all.iter().step_by(2) {
        world.insert_one(e, Disabled).unwrap();
        off.insert(e);
    }
    agrees(&mut world, &all, &off, "start");

    // One entity at a time, so each move swaps the last row of the table
    // it leaves into its place: disabled and enabled rows trade places.
    for &e in &all {
        world.insert_one(e, Big(1)).unwrap();
        agrees(&mut world, &all, &off, "insert_one of a table component");
        world.insert(e, (Note(1), Vel(2), Big(3))).unwrap();
        agrees(&mut world, &all, &off, "overwrite in place, sparse part");
        world.insert(e, (Tag(1), Note(2))).unwrap();
        agrees(&mut world, &all, &off, "a sparse-only bundle");
        world.remove::<(Big, Note)>(e).unwrap();
        agrees(&mut world, &all, &off, "remove a mixed bundle");
        world.remove::<Tag>(e).unwrap();
        agrees(&mut world, &all, &off, "remove a sparse-only bundle");
        world.remove_one::<Vel>(e).unwrap();
        agrees(&mut world, &all, &off, "remove_one of a table component");
        world
            .entity_mut(e)
            .unwrap()
            .insert((Vel(4), Big(5)))
            .unwrap();
        agrees(&mut world, &all, &off, "insert through the entity handle");
        let mut builder = mosaic::EntityBuilder::new();
        builder.add(Big(6)).add(Note(7));
        world.insert(e, builder.build()).unwrap();
        agrees(&mut world, &all, &off, "insert of a builder");
    }

    // The marker by bundle: in with a table component, out with one, and
    // the same with sparse-only bundles.
    let (on_a, on_b) = (all[1], all[3]);
    world.insert(on_a, (Disabled, Vel(0))).unwrap();
    off.insert(on_a);
    agrees(&mut world, &all, &off, "insert (Disabled, table)");
    world.insert(on_b, (Note(0), Disabled)).unwrap();
    off.insert(on_b);
    agrees(&mut world, &all, &off, "insert (sparse, Disabled)");
    let (was_a, was_b) = (all[0], all[2]);
    world.remove::<(Big, Disabled)>(was_a).unwrap();
    off.remove(&was_a);
    agrees(&mut world, &all, &off, "remove (table, Disabled)");
    world.remove::<(Disabled, Note)>(was_b).unwrap();
    off.remove(&was_b);
    agrees(&mut world, &all, &off, "remove (Disabled, sparse)");
    // A failed removal of a bundle with the marker changes nothing.
    assert!(world.remove::<(Tag, Disabled)>(all[4]).is_err());
    agrees(&mut world, &all, &off, "failed removal");
    let mut builder = mosaic::EntityBuilder::new();
    builder.add(Disabled).add(Big(8));
    world.insert(all[5], builder.build()).unwrap();
    off.insert(all[5]);
    agrees(
        &mut world,
        &all,
        &off,
        "insert of a builder with the marker",
    );
    let last = all[7];
    world.run_system_once(move |mut commands: Commands| {
        commands.entity(last).insert((Vel(9), Disabled));
    });
    off.insert(last);
    agrees(&mut world, &all, &off, "insert by command");

    // Spawns: with the marker, and without it in a world that has it.
    let mut all = all;
    let mut builder = mosaic::EntityBuilder::new();
    builder.add(Pos(100)).add(Disabled);
    let spawned = [
        (world.spawn((Pos(101), Disabled)), true),
        (world.spawn((Pos(102), Vel(0))), false),
        (world.spawn(builder.build()), true),
        (world.spawn(Tag(0)), false),
    ];
    for (e, disabled) in spawned {
        all.push(e);
        if disabled {
            off.insert(e);
        }
    }
    let batch = world.spawn_batch((0..3).map(|i| (Pos(110 + i), Disabled)));
    all.extend(&batch);
    off.extend(&batch);
    let mut columns = mosaic::ColumnBatch::new(2);
    columns.push(vec![Pos(120), Pos(121)]).unwrap();
    all.extend(world.spawn_column_batch(columns));
    let mut columns = mosaic::ColumnBatch::new(2);
    columns.push(vec![Pos(130), Pos(131)]).unwrap();
    columns.push(vec![Disabled; 2]).unwrap();
    let marked = world.spawn_column_batch(columns);
    all.extend(&marked);
    off.extend(&marked);
    agrees(&mut world, &all, &off, "spawns");
}

/// A requirement that is the marker disables what it comes with: on
/// spawn, on insert, by builder and by column batch.
#[test]
fn a_required_marker_disables_the_entity() {
    let mut world = World::new();
    let plain = world.spawn(Pos(0));
    let mut all = vec![plain, world.spawn((Pos(1), Dormant))];
    let mut off = BTreeSet::from([all[1]]);
    agrees(&mut world, &all, &off, "spawn");
    world.insert(plain, (Vel(0), Dormant)).unwrap();
    off.insert(plain);
    agrees(&mut world, &all, &off, "insert");
    let other = world.spawn(Pos(2));
    all.push(other);
    let mut builder = mosaic::EntityBuilder::new();
    builder.add(Dormant).add(Note(0));
    world.insert(other, builder.build()).unwrap();
    off.insert(other);
    agrees(&mut world, &all, &off, "insert of a builder");
    let mut columns = mosaic::ColumnBatch::new(2);
    columns.push(vec![Pos(3), Pos(4)]).unwrap();
    columns.push(vec![Dormant; 2]).unwrap();
    let marked = world.spawn_column_batch(columns);
    all.extend(&marked);
    off.extend(&marked);
    agrees(&mut world, &all, &off, "column batch");
    // Taking the requirement away takes the marker's effect away.
    world.remove::<Disabled>(plain).unwrap();
    off.remove(&plain);
    agrees(&mut world, &all, &off, "removal");
}
