//! The relationships/hierarchy API as a new user meets it: every public
//! method with the "wrong" input (self-edges, dead and recycled handles,
//! edges that are not there), long random edit sequences checked against a
//! model, despawn policies in chains and cycles, queries and change
//! detection across schedule runs, commands on entities that died earlier
//! in the same buffer, re-entrant observers, and the hierarchy walkers.
//! Every edit is followed by `check_invariants`.

use std::sync::{Arc, Mutex};

use mosaic::prelude::*;
use mosaic::{EntityError, OnRelate, OnUnrelate, RelationError};

mod common;
use common::relations::{DependsOn, Lcg, OwnedBy, spawn_n};

#[derive(Relation, Debug, PartialEq, Clone)]
struct Likes;

#[derive(Relation, Debug, PartialEq, Clone)]
struct Owes(u32);

#[derive(Relation, Debug, PartialEq, Clone)]
#[relation(one)]
struct Aims(u32);

#[derive(Relation, Debug, PartialEq)]
#[relation(on_target_despawn = "despawn")]
struct PartOf;

#[derive(Component, Debug, PartialEq, Clone)]
struct Name(&'static str);

/// Everything a user can read about the edges of `es`, to compare before
/// and after an edit that must change nothing.
fn snapshot(world: &World, es: &[Entity]) -> Vec<String> {
    es.iter()
        .map(|&e| {
            format!(
                "{e:?} alive={} parent={:?} children={:?} likes={:?}/{:?} owes={:?}/{:?} aims={:?}/{:?}",
                world.contains(e),
                world.parent(e),
                world.children(e),
                world.targets::<Likes>(e),
                world.sources::<Likes>(e),
                world.get::<Relation<Owes>>(e).ok().map(|r| r.iter().map(|(t, d)| (t, d.0)).collect::<Vec<_>>()),
                world.sources::<Owes>(e),
                world.get::<Relation<Aims>>(e).ok().map(|r| r.iter().map(|(t, d)| (t, d.0)).collect::<Vec<_>>()),
                world.sources::<Aims>(e),
            )
        })
        .collect()
}

/// A handle whose index is alive again under a newer generation.
fn recycled(world: &mut World) -> (Entity, Entity) {
    let old = world.spawn(());
    world.despawn(old).unwrap();
    let new = world.spawn(());
    assert_eq!(old.index(), new.index(), "the allocator reuses the slot");
    assert_ne!(old, new);
    (old, new)
}

// ----- wrong inputs ------------------------------------------------------------------

#[test]
fn self_edges_of_an_acyclic_relation_are_cycles_and_change_nothing() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 2);
    world.add_child(e[0], e[1]).unwrap();
    let before = snapshot(&world, &e);
    for x in [e[0], e[1]] {
        assert!(matches!(
            world.add_child(x, x),
            Err(RelationError::Cycle { entity, target, relation: "ChildOf" }) if entity == x && target == x
        ));
        assert!(matches!(
            world.set_parent(x, x),
            Err(RelationError::Cycle { .. })
        ));
        assert!(matches!(
            world.relate(x, x, ChildOf(x)),
            Err(RelationError::Cycle { .. })
        ));
        world.check_invariants();
    }
    assert_eq!(snapshot(&world, &e), before);
}

#[test]
fn self_edges_of_other_relations_are_edges_like_any() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[0], Likes).unwrap();
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[2], e[0], Likes).unwrap();
    world.relate(e[0], e[0], Aims(1)).unwrap();
    world.relate(e[0], e[0], Owes(3)).unwrap();
    world.check_invariants();
    assert!(world.has_relation::<Likes>(e[0], e[0]));
    assert_eq!(world.targets::<Likes>(e[0]), [e[0], e[1]]);
    assert_eq!(world.sources::<Likes>(e[0]), [e[0], e[2]]);
    // Again, with new data: replaced, not doubled.
    world.relate(e[0], e[0], Owes(4)).unwrap();
    assert_eq!(world.relation::<Owes>(e[0], e[0]), Some(&Owes(4)));
    assert_eq!(world.sources::<Owes>(e[0]), [e[0]]);
    // A `one` self-edge replaced by an edge elsewhere.
    world.relate(e[0], e[1], Aims(2)).unwrap();
    assert!(world.sources::<Aims>(e[0]).is_empty());
    assert_eq!(world.sources::<Aims>(e[1]), [e[0]]);
    world.relate(e[0], e[0], Aims(3)).unwrap();
    world.check_invariants();
    assert_eq!(world.unrelate::<Likes>(e[0], e[0]), Ok(Likes));
    assert_eq!(world.sources::<Likes>(e[0]), [e[2]]);
    world.relate(e[0], e[0], Likes).unwrap();
    world.check_invariants();
    // The entity goes with every edge, its self-edges included.
    world.despawn(e[0]).unwrap();
    world.check_invariants();
    assert!(world.targets::<Likes>(e[2]).is_empty());
    assert!(world.sources::<Likes>(e[1]).is_empty());
    assert!(world.sources::<Aims>(e[1]).is_empty());
}

#[test]
fn self_edges_under_despawn_and_refuse_policies() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    // Owning itself: the despawn takes it once.
    world.relate(e[0], e[0], OwnedBy).unwrap();
    world.relate(e[1], e[1], PartOf).unwrap();
    world.relate(e[2], e[1], PartOf).unwrap();
    world.despawn(e[0]).unwrap();
    world.check_invariants();
    world.despawn(e[1]).unwrap();
    world.check_invariants();
    assert!(!world.contains(e[2]), "a part of a despawned whole goes");
    assert!(world.is_empty());

    // Depending on itself: the pin's source goes with its target, so it
    // keeps nothing (the rule of every despawn: only a survivor's pin
    // refuses), for a plain despawn as for a recursive one.
    let a = world.spawn(());
    world.relate(a, a, DependsOn).unwrap();
    world.despawn(a).unwrap();
    world.check_invariants();
    let b = world.spawn(());
    world.relate(b, b, DependsOn).unwrap();
    world.despawn_recursive(b).unwrap();
    assert!(world.is_empty());
    world.check_invariants();
    // Pinned by another as well: refused, changing nothing.
    let (c, d) = (world.spawn(()), world.spawn(()));
    world.relate(c, c, DependsOn).unwrap();
    world.relate(d, c, DependsOn).unwrap();
    assert_eq!(
        world.despawn(c),
        Err(EntityError::DespawnRefused {
            entity: c,
            relation: "DependsOn"
        })
    );
    assert_eq!(world.sources::<DependsOn>(c), [c, d]);
    world.check_invariants();
}

#[test]
fn dead_never_spawned_and_recycled_handles_on_either_side() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 2);
    world.add_child(e[0], e[1]).unwrap();
    world.relate(e[1], e[0], Likes).unwrap();
    let (old, new) = recycled(&mut world);
    // A handle from another, bigger world: never spawned here.
    let mut elsewhere = World::new();
    let never = spawn_n(&mut elsewhere, 50)[49];
    let mut all = e.clone();
    all.push(new);
    let before = snapshot(&world, &all);
    for bad in [old, never] {
        for live in [e[0], e[1], new] {
            assert_eq!(
                world.relate(bad, live, Likes),
                Err(RelationError::NoSuchEntity(bad))
            );
            assert_eq!(
                world.relate(live, bad, Likes),
                Err(RelationError::NoSuchEntity(bad))
            );
            assert_eq!(
                world.relate(live, bad, Aims(1)),
                Err(RelationError::NoSuchEntity(bad))
            );
            assert_eq!(
                world.add_child(bad, live),
                Err(RelationError::NoSuchEntity(bad))
            );
            assert_eq!(
                world.add_child(live, bad),
                Err(RelationError::NoSuchEntity(bad))
            );
            assert_eq!(
                world.set_parent(live, bad),
                Err(RelationError::NoSuchEntity(bad))
            );
            assert_eq!(
                world.set_parent(bad, live),
                Err(RelationError::NoSuchEntity(bad))
            );
            assert!(world.unrelate::<Likes>(bad, live).is_err());
            assert!(world.unrelate::<Likes>(live, bad).is_err());
            assert!(!world.has_relation::<Likes>(bad, live));
            assert!(!world.has_relation::<Likes>(live, bad));
            assert_eq!(world.relation::<Likes>(live, bad), None);
            assert_eq!(world.relation_mut::<Likes>(bad, live), None);
        }
        assert_eq!(
            world.remove_parent(bad),
            Err(RelationError::NoSuchEntity(bad))
        );
        assert_eq!(
            world.spawn_child(bad, ()),
            Err(RelationError::NoSuchEntity(bad))
        );
        assert_eq!(world.unrelate_all::<Likes>(bad), 0);
        assert_eq!(world.parent(bad), None);
        assert!(world.children(bad).is_empty());
        assert!(world.targets::<Likes>(bad).is_empty());
        assert!(world.sources::<Likes>(bad).is_empty());
        assert_eq!(world.ancestors(bad).count(), 0);
        assert_eq!(world.root_ancestor(bad), bad);
        assert_eq!(world.descendants(bad).count(), 0);
        assert_eq!(
            world.despawn_descendants(bad),
            Err(EntityError::NoSuchEntity(bad))
        );
        assert_eq!(
            world.despawn_recursive(bad),
            Err(EntityError::NoSuchEntity(bad))
        );
        world.check_invariants();
    }
    assert_eq!(snapshot(&world, &all), before);
    assert_eq!(world.len(), 3);
}

#[test]
fn a_recycled_slot_does_not_inherit_the_old_entitys_edges() {
    let mut world = World::new();
    let parent = world.spawn(());
    let child = world.spawn_child(parent, ()).unwrap();
    let fan = world.spawn(());
    world.relate(fan, child, Likes).unwrap();
    world.relate(child, fan, Owes(1)).unwrap();
    world.despawn(child).unwrap();
    let reborn = world.spawn(());
    assert_eq!(reborn.index(), child.index());
    assert_eq!(world.parent(reborn), None);
    assert!(world.children(parent).is_empty());
    assert!(world.sources::<Likes>(reborn).is_empty());
    assert!(world.targets::<Likes>(fan).is_empty());
    assert!(world.sources::<Owes>(fan).is_empty());
    assert!(!world.has_relation::<Likes>(fan, child));
    assert!(!world.has_relation::<Likes>(fan, reborn));
    world.check_invariants();
}

#[test]
fn unrelating_twice_and_unrelate_all_on_nothing() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Owes(5)).unwrap();
    world.relate(e[0], e[2], Owes(6)).unwrap();
    assert_eq!(world.unrelate::<Owes>(e[0], e[1]), Ok(Owes(5)));
    let before = snapshot(&world, &e);
    assert_eq!(
        world.unrelate::<Owes>(e[0], e[1]),
        Err(RelationError::NotRelated {
            entity: e[0],
            target: e[1],
            relation: "Owes"
        })
    );
    // The other direction is another edge.
    assert!(world.unrelate::<Owes>(e[2], e[0]).is_err());
    // Of a relation never used in this world.
    assert!(world.unrelate::<Likes>(e[0], e[2]).is_err());
    assert_eq!(world.unrelate_all::<Likes>(e[0]), 0);
    assert_eq!(
        world.unrelate_all::<Owes>(e[1]),
        0,
        "a target has no outgoing edge"
    );
    assert_eq!(snapshot(&world, &e), before);
    world.check_invariants();
    assert_eq!(world.unrelate_all::<Owes>(e[0]), 1);
    assert_eq!(world.unrelate_all::<Owes>(e[0]), 0);
    world.check_invariants();
}

#[test]
fn remove_parent_of_a_root_and_set_parent_to_the_current_parent() {
    let mut world = World::new();
    let root = world.spawn(());
    let kids: Vec<Entity> = (0..3)
        .map(|_| world.spawn_child(root, ()).unwrap())
        .collect();
    let gk = world.spawn_child(kids[1], ()).unwrap();
    let mut all = kids.clone();
    all.extend([root, gk]);
    let before = snapshot(&world, &all);
    assert_eq!(
        world.remove_parent(root),
        Err(RelationError::NoTarget {
            entity: root,
            relation: "ChildOf"
        })
    );
    assert_eq!(snapshot(&world, &all), before);
    // Setting the parent it has: no change, the order of siblings kept.
    for &k in &kids {
        world.set_parent(k, root).unwrap();
        world.add_child(root, k).unwrap();
        world.check_invariants();
    }
    world.set_parent(gk, kids[1]).unwrap();
    assert_eq!(snapshot(&world, &all), before);
    assert_eq!(world.children(root), kids);
    // A child can't become its grandchild's child, nor the root its grandchild's.
    assert!(matches!(
        world.set_parent(kids[1], gk),
        Err(RelationError::Cycle { .. })
    ));
    assert!(matches!(
        world.set_parent(root, gk),
        Err(RelationError::Cycle { .. })
    ));
    assert_eq!(snapshot(&world, &all), before);
    world.check_invariants();
}

#[test]
fn a_one_relation_related_again_to_its_target_keeps_the_edge_with_new_data() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    world.relate(e[0], e[3], Aims(1)).unwrap();
    world.relate(e[1], e[3], Aims(2)).unwrap();
    world.relate(e[2], e[3], Aims(3)).unwrap();
    let order = world.sources::<Aims>(e[3]).to_vec();
    world.relate(e[0], e[3], Aims(10)).unwrap();
    assert_eq!(world.relation::<Aims>(e[0], e[3]), Some(&Aims(10)));
    assert_eq!(world.sources::<Aims>(e[3]), order, "same edge, same place");
    world.check_invariants();
    // Moving it elsewhere and back: new data, one edge.
    world.relate(e[0], e[1], Aims(11)).unwrap();
    assert_eq!(world.targets::<Aims>(e[0]), [e[1]]);
    assert_eq!(world.relation::<Aims>(e[0], e[3]), None);
    world.relate(e[0], e[3], Aims(12)).unwrap();
    assert_eq!(world.targets::<Aims>(e[0]), [e[3]]);
    assert_eq!(world.sources::<Aims>(e[3]).len(), 3);
    assert!(world.sources::<Aims>(e[1]).is_empty());
    world.check_invariants();
}

#[test]
fn relation_mut_writes_what_relation_then_reads() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 40);
    // A long list of sources (indexed) and one with many targets.
    for &s in &e[1..] {
        world.relate(s, e[0], Owes(1)).unwrap();
        world.relate(e[0], s, Owes(100)).unwrap();
    }
    for (i, &s) in e[1..].iter().enumerate() {
        *world.relation_mut::<Owes>(s, e[0]).unwrap() = Owes(i as u32);
        world.relation_mut::<Owes>(e[0], s).unwrap().0 += i as u32;
    }
    for (i, &s) in e[1..].iter().enumerate() {
        assert_eq!(world.relation::<Owes>(s, e[0]), Some(&Owes(i as u32)));
        assert_eq!(world.relation::<Owes>(e[0], s), Some(&Owes(100 + i as u32)));
    }
    // No such edge: None, and nothing created.
    assert_eq!(world.relation_mut::<Owes>(e[1], e[2]), None);
    assert_eq!(world.relation_mut::<Aims>(e[1], e[2]), None);
    assert!(!world.has_relation::<Owes>(e[1], e[2]));
    world.check_invariants();
}

// ----- order and content -------------------------------------------------------------

/// A model of the edges: (source, target, relation) triples, by name.
#[derive(Default)]
struct Model {
    likes: Vec<(Entity, Entity)>,
    parent: std::collections::HashMap<Entity, Entity>,
}

fn agree(world: &World, model: &Model, live: &[Entity]) {
    world.check_invariants();
    for &e in live {
        let mut t: Vec<Entity> = world.targets::<Likes>(e).to_vec();
        let mut want: Vec<Entity> = model
            .likes
            .iter()
            .filter(|p| p.0 == e)
            .map(|p| p.1)
            .collect();
        t.sort();
        want.sort();
        assert_eq!(t, want, "targets of {e:?}");
        let mut s: Vec<Entity> = world.sources::<Likes>(e).to_vec();
        let mut want: Vec<Entity> = model
            .likes
            .iter()
            .filter(|p| p.1 == e)
            .map(|p| p.0)
            .collect();
        s.sort();
        want.sort();
        assert_eq!(s, want, "sources of {e:?}");
        assert_eq!(world.parent(e), model.parent.get(&e).copied());
        let mut c = world.children(e).to_vec();
        let mut want: Vec<Entity> = model
            .parent
            .iter()
            .filter(|p| *p.1 == e)
            .map(|p| *p.0)
            .collect();
        c.sort();
        want.sort();
        assert_eq!(c, want, "children of {e:?}");
        // The component a query sees is the list the world reports.
        let q = world
            .get::<Children>(e)
            .map(|c| c.as_slice().to_vec())
            .unwrap_or_default();
        assert_eq!(q, world.children(e));
        let d: Vec<Entity> = world.descendants(e).collect();
        let mut seen = std::collections::HashSet::new();
        assert!(d.iter().all(|x| seen.insert(*x)), "descendants repeat");
        for &x in &d {
            assert!(world.ancestors(x).any(|a| a == e));
        }
        let root = world.root_ancestor(e);
        assert_eq!(world.parent(root), None);
    }
}

#[test]
fn long_random_edit_sequences_agree_with_a_model() {
    // Under Miri, one short sequence: the interpreter is slow.
    let (seeds, steps) = if cfg!(miri) { (1, 30) } else { (6, 1500) };
    for seed in 0..seeds {
        let mut rng = Lcg(seed * 7919 + 1);
        let mut world = World::new();
        let mut model = Model::default();
        let mut live = spawn_n(&mut world, 12);
        for _ in 0..steps {
            let n = live.len();
            let (a, b) = (live[rng.below(n)], live[rng.below(n)]);
            match rng.below(10) {
                0 => live.push(world.spawn(())),
                1 | 2 => {
                    let r = world.relate(a, b, Likes);
                    assert!(r.is_ok());
                    if !model.likes.contains(&(a, b)) {
                        model.likes.push((a, b));
                    }
                }
                3 => {
                    let had = model.likes.iter().position(|&p| p == (a, b));
                    let r = world.unrelate::<Likes>(a, b);
                    assert_eq!(r.is_ok(), had.is_some());
                    if let Some(i) = had {
                        model.likes.remove(i);
                    }
                }
                4 | 5 => {
                    let mut p = Some(a);
                    let mut cyc = false;
                    while let Some(x) = p {
                        if x == b {
                            cyc = true;
                        }
                        p = model.parent.get(&x).copied();
                    }
                    let r = world.add_child(a, b);
                    assert_eq!(r.is_err(), cyc, "add_child({a:?}, {b:?})");
                    if !cyc {
                        model.parent.insert(b, a);
                    }
                }
                6 => {
                    let r = world.remove_parent(a);
                    assert_eq!(r.ok(), model.parent.remove(&a));
                }
                7 if n > 4 => {
                    world.despawn(a).unwrap();
                    live.retain(|&x| x != a);
                    model.likes.retain(|p| p.0 != a && p.1 != a);
                    model.parent.remove(&a);
                    model.parent.retain(|_, p| *p != a);
                }
                8 if n > 6 => {
                    let gone: Vec<Entity> =
                        std::iter::once(a).chain(world.descendants(a)).collect();
                    world.despawn_recursive(a).unwrap();
                    for g in gone {
                        assert!(!world.contains(g));
                        live.retain(|&x| x != g);
                        model.likes.retain(|p| p.0 != g && p.1 != g);
                        model.parent.remove(&g);
                        model.parent.retain(|_, p| *p != g);
                    }
                }
                9 => {
                    let unrelated = world.unrelate_all::<Likes>(a);
                    let before = model.likes.len();
                    model.likes.retain(|p| p.0 != a);
                    assert_eq!(unrelated, before - model.likes.len());
                }
                _ => {}
            }
            agree(&world, &model, &live);
        }
    }
}

#[test]
fn children_order_after_removals_is_the_documented_swap_remove() {
    let mut world = World::new();
    let p = world.spawn(());
    let k: Vec<Entity> = (0..5).map(|_| world.spawn_child(p, ()).unwrap()).collect();
    assert_eq!(world.children(p), k, "insertion order while only adding");
    // Removing one moves the last into its place (documented: "edge order,
    // which a removal may change").
    world.remove_parent(k[1]).unwrap();
    assert_eq!(world.children(p), [k[0], k[4], k[2], k[3]]);
    world.despawn(k[0]).unwrap();
    assert_eq!(world.children(p), [k[3], k[4], k[2]]);
    world.check_invariants();
}

#[test]
fn clone_entity_of_parent_child_and_target() {
    let mut world = World::new();
    let root = world.spawn(Name("root"));
    let parent = world.spawn_child(root, Name("parent")).unwrap();
    let child = world.spawn_child(parent, Name("child")).unwrap();
    let target = world.spawn(Name("target"));
    world.relate(child, target, Owes(3)).unwrap();
    world.relate(parent, target, Aims(9)).unwrap();

    // A parent's copy: same parent (root), no children, same Aims.
    let pc = world.clone_entity(parent).unwrap();
    assert_eq!(world.parent(pc), Some(root));
    assert!(world.children(pc).is_empty());
    assert_eq!(world.children(parent), [child]);
    assert_eq!(world.relation::<Aims>(pc, target), Some(&Aims(9)));
    assert_eq!(world.sources::<Aims>(target).len(), 2);
    // A target's copy: nothing relates to it.
    let tc = world.clone_entity(target).unwrap();
    assert!(world.sources::<Owes>(tc).is_empty() && world.sources::<Aims>(tc).is_empty());
    // A root's copy is a root.
    let rc = world.clone_entity(root).unwrap();
    assert_eq!(world.parent(rc), None);
    assert!(world.children(rc).is_empty());
    assert_eq!(world.children(root).len(), 2);
    world.check_invariants();
}

#[test]
fn clear_then_reuse_every_api() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    world.add_child(e[0], e[1]).unwrap();
    world.relate(e[2], e[0], DependsOn).unwrap();
    world.relate(e[1], e[2], OwnedBy).unwrap();
    let mut order = ParentFirst::<ChildOf>::new();
    assert_eq!(order.get(&world), [e[0], e[1]]);
    world.clear();
    world.check_invariants();
    assert!(order.get(&world).is_empty());
    for &x in &e {
        assert_eq!(world.parent(x), None);
        assert!(world.children(x).is_empty());
    }
    let f = spawn_n(&mut world, 3);
    world.add_child(f[0], f[1]).unwrap();
    world.relate(f[2], f[0], DependsOn).unwrap();
    assert_eq!(order.get(&world), [f[0], f[1]]);
    assert!(world.despawn(f[0]).is_err());
    world.check_invariants();
}

#[test]
fn spawn_at_over_an_entity_with_edges_and_take_of_one() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    world.add_child(e[0], e[1]).unwrap();
    world.relate(e[2], e[1], Likes).unwrap();
    world.relate(e[1], e[2], Owes(2)).unwrap();
    // A newer generation of e[1]'s slot replaces it: its edges go.
    let mut elsewhere = World::new();
    let mut newer = elsewhere.spawn(());
    while newer.index() != e[1].index() || newer == e[1] {
        elsewhere.despawn(newer).unwrap();
        newer = elsewhere.spawn(());
        if newer.index() < e[1].index() {
            newer = elsewhere.spawn(());
        }
    }
    world.spawn_at(newer, Name("new"));
    world.check_invariants();
    assert!(!world.contains(e[1]));
    assert!(world.children(e[0]).is_empty());
    assert!(world.targets::<Likes>(e[2]).is_empty());
    assert!(world.sources::<Owes>(e[2]).is_empty());
    assert_eq!(world.parent(newer), None);

    // take: the edges stay here, from both ends.
    let c = world.spawn_child(e[0], Name("c")).unwrap();
    world.relate(e[2], c, Likes).unwrap();
    let taken = world.take(c).unwrap();
    world.check_invariants();
    assert!(world.children(e[0]).is_empty());
    assert!(world.targets::<Likes>(e[2]).is_empty());
    let back = world.spawn(taken);
    assert_eq!(world.get::<Name>(back), Ok(&Name("c")));
    assert_eq!(world.parent(back), None);
    world.check_invariants();
}

#[test]
fn despawn_policies_in_chains_and_cycles() {
    let mut world = World::new();
    // a <-OwnedBy- b <-OwnedBy- c, and a -OwnedBy-> c: a cycle of ownership.
    let e = spawn_n(&mut world, 4);
    world.relate(e[1], e[0], OwnedBy).unwrap();
    world.relate(e[2], e[1], OwnedBy).unwrap();
    world.relate(e[0], e[2], OwnedBy).unwrap();
    world.relate(e[3], e[2], Likes).unwrap();
    world.despawn(e[1]).unwrap();
    world.check_invariants();
    assert!(!world.contains(e[0]) && !world.contains(e[1]) && !world.contains(e[2]));
    assert!(world.contains(e[3]));
    assert!(world.targets::<Likes>(e[3]).is_empty());

    // Two entities owning each other through a many relation.
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.relate(a, b, PartOf).unwrap();
    world.relate(b, a, PartOf).unwrap();
    world.despawn(a).unwrap();
    assert!(!world.contains(b));
    world.check_invariants();

    // A chain whose middle refuses: the despawn of the head stops there.
    let (head, mid, tail, user) = (
        world.spawn(()),
        world.spawn(()),
        world.spawn(()),
        world.spawn(()),
    );
    world.relate(mid, head, OwnedBy).unwrap();
    world.relate(tail, mid, OwnedBy).unwrap();
    world.relate(user, mid, DependsOn).unwrap();
    world.despawn(head).unwrap();
    world.check_invariants();
    assert!(world.contains(mid), "kept alive by its DependsOn source");
    assert!(world.contains(tail));
    assert_eq!(
        world.targets::<OwnedBy>(mid),
        Vec::<Entity>::new().as_slice()
    );
    assert_eq!(world.targets::<OwnedBy>(tail), [mid]);
}

/// A refusing source inside the subtree goes with it and keeps nothing
/// (issue 39, item 11: the rule of cascades, so the same graph gives the
/// same world); a refusing source outside refuses the sweep.
#[test]
fn refuse_with_the_refusing_source_inside_the_subtree() {
    let mut world = World::new();
    let root = world.spawn(());
    let a = world.spawn_child(root, ()).unwrap();
    let b = world.spawn_child(a, ()).unwrap();
    world.relate(b, a, DependsOn).unwrap();
    world.despawn_recursive(root).unwrap();
    assert!(world.is_empty());
    world.check_invariants();

    // A source outside the subtree refuses it, changing nothing.
    let mut world = World::new();
    let root = world.spawn(());
    let a = world.spawn_child(root, ()).unwrap();
    let b = world.spawn_child(a, ()).unwrap();
    let outside = world.spawn(());
    world.relate(outside, a, DependsOn).unwrap();
    let all = [root, a, b, outside];
    let before = snapshot(&world, &all);
    assert_eq!(
        world.despawn_recursive(root),
        Err(EntityError::DespawnRefused {
            entity: a,
            relation: "DependsOn"
        })
    );
    assert_eq!(
        world.despawn_descendants(root),
        Err(EntityError::DespawnRefused {
            entity: a,
            relation: "DependsOn"
        })
    );
    assert_eq!(snapshot(&world, &all), before);
    assert_eq!(world.len(), 4);
    world.check_invariants();
    // Once the outside source lets go, the subtree can go.
    world.unrelate::<DependsOn>(outside, a).unwrap();
    world.despawn_recursive(root).unwrap();
    assert_eq!(world.len(), 1);
    assert!(world.contains(outside));
    world.check_invariants();
}

#[test]
fn despawn_recursive_with_despawn_policies_reaching_outside_and_back() {
    let mut world = World::new();
    let root = world.spawn(());
    let kid = world.spawn_child(root, ()).unwrap();
    let outside = world.spawn(());
    let outside_kid = world.spawn_child(outside, ()).unwrap();
    // `outside` is owned by `kid`; `root` is owned by `outside_kid`.
    world.relate(outside, kid, OwnedBy).unwrap();
    world.relate(root, outside_kid, PartOf).unwrap();
    let bystander = world.spawn(());
    world.despawn_recursive(root).unwrap();
    world.check_invariants();
    assert!(!world.contains(root) && !world.contains(kid) && !world.contains(outside));
    // outside's own child is unparented, not despawned.
    assert!(world.contains(outside_kid));
    assert_eq!(world.parent(outside_kid), None);
    assert!(world.contains(bystander));
}

// ----- walkers -----------------------------------------------------------------------

#[test]
fn walkers_on_roots_leaves_wide_and_reparented_trees() {
    let mut world = World::new();
    let r = world.spawn(());
    assert_eq!(world.ancestors(r).count(), 0);
    assert_eq!(world.root_ancestor(r), r);
    assert_eq!(world.descendants(r).count(), 0);
    world.despawn_descendants(r).unwrap();
    assert!(world.contains(r));
    // A wide tree; narrower under Miri, whose interpreter is slow.
    let n = if cfg!(miri) { 10 } else { 100 };
    let kids: Vec<Entity> = (0..n).map(|_| world.spawn_child(r, ()).unwrap()).collect();
    let gk: Vec<Entity> = kids
        .iter()
        .map(|&k| world.spawn_child(k, ()).unwrap())
        .collect();
    let d: Vec<Entity> = world.descendants(r).collect();
    assert_eq!(&d[..n], &kids[..]);
    assert_eq!(&d[n..], &gk[..]);
    // Reparent a whole subtree under a leaf of another.
    world.set_parent(kids[0], gk[n - 1]).unwrap();
    assert_eq!(
        world.ancestors(gk[0]).collect::<Vec<_>>(),
        [kids[0], gk[n - 1], kids[n - 1], r]
    );
    assert_eq!(world.root_ancestor(gk[0]), r);
    assert_eq!(world.descendants(r).count(), 2 * n);
    assert_eq!(
        world.descendants(kids[n - 1]).collect::<Vec<_>>(),
        [gk[n - 1], kids[0], gk[0]]
    );
    // The walkers follow only ChildOf.
    world.relate(r, gk[5], Likes).unwrap();
    assert_eq!(world.ancestors(r).count(), 0);
    world.despawn_descendants(kids[n - 1]).unwrap();
    assert!(!world.contains(kids[0]) && !world.contains(gk[0]) && !world.contains(gk[n - 1]));
    assert!(world.children(kids[n - 1]).is_empty());
    assert_eq!(world.descendants(r).count(), (n - 1) + (n - 2));
    world.check_invariants();
    world.despawn_descendants(r).unwrap();
    assert_eq!(world.len(), 1);
    assert!(world.targets::<Likes>(r).is_empty());
    world.check_invariants();
}

#[test]
fn despawn_descendants_with_an_owner_inside_the_subtree() {
    let mut world = World::new();
    let keep = world.spawn(());
    let kid = world.spawn_child(keep, ()).unwrap();
    // `keep` is owned by its own child: despawning the descendants takes it.
    world.relate(keep, kid, OwnedBy).unwrap();
    world.despawn_descendants(keep).unwrap();
    world.check_invariants();
    assert!(!world.contains(kid));
    assert!(!world.contains(keep), "documented OnTargetDespawn::Despawn");
}

// ----- queries, systems, change detection --------------------------------------------

#[derive(Default)]
struct Seen(Vec<(&'static str, Entity)>);

type LikesChanged = (With<Relation<Likes>>, Changed<Relation<Likes>>);

#[test]
fn change_detection_in_systems_sees_each_edge_change_once() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let mut schedule = Schedule::new();
    schedule.add_system(
        "watch",
        |added: Query<Entity, Added<Relation<ChildOf>>>,
         changed: Query<Entity, Changed<Relation<ChildOf>>>,
         kids_changed: Query<Entity, Changed<Children>>,
         kids_added: Query<Entity, Added<Children>>,
         likes: Query<Entity, LikesChanged>,
         mut seen: ResMut<Seen>| {
            for e in added.iter() {
                seen.0.push(("added", e));
            }
            for e in changed.iter() {
                seen.0.push(("changed", e));
            }
            for e in kids_changed.iter() {
                seen.0.push(("kids_changed", e));
            }
            for e in kids_added.iter() {
                seen.0.push(("kids_added", e));
            }
            for e in likes.iter() {
                seen.0.push(("likes", e));
            }
        },
    );
    let take = |world: &mut World| {
        let mut v = std::mem::take(&mut world.resource_mut::<Seen>().0);
        v.sort();
        v
    };
    let e = spawn_n(&mut world, 4);
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty());

    world.add_child(e[0], e[1]).unwrap();
    schedule.run(&mut world);
    let mut want = vec![
        ("added", e[1]),
        ("changed", e[1]),
        ("kids_changed", e[0]),
        ("kids_added", e[0]),
    ];
    want.sort();
    assert_eq!(take(&mut world), want);
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty(), "seen exactly once");

    // Reparent: the child's edge changed, both parents' lists changed.
    world.set_parent(e[1], e[2]).unwrap();
    schedule.run(&mut world);
    // A `one` edge moved is a new edge: its component is added again.
    let mut want = vec![
        ("added", e[1]),
        ("changed", e[1]),
        ("kids_changed", e[2]),
        ("kids_added", e[2]),
    ];
    want.sort();
    assert_eq!(take(&mut world), want);
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty());

    // Data replaced by relate, then by relation_mut.
    world.relate(e[3], e[0], Likes).unwrap();
    schedule.run(&mut world);
    assert_eq!(take(&mut world), [("likes", e[3])]);
    world.relate(e[3], e[0], Likes).unwrap();
    schedule.run(&mut world);
    assert_eq!(take(&mut world), [("likes", e[3])]);
    let _ = world.relation_mut::<Likes>(e[3], e[0]).unwrap();
    schedule.run(&mut world);
    assert_eq!(take(&mut world), [("likes", e[3])]);
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty());

    // Unrelate: the component goes; nothing is reported changed for it.
    world.remove_parent(e[1]).unwrap();
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty());
    assert_eq!(
        world
            .query_filtered::<Entity, With<Children>>()
            .iter(&world)
            .count(),
        0
    );
}

#[test]
fn relation_queries_with_filters_and_options() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    world.relate(e[0], e[1], Owes(1)).unwrap();
    world.relate(e[0], e[2], Owes(2)).unwrap();
    world.add_child(e[1], e[2]).unwrap();
    world.relate(e[3], e[3], Owes(7)).unwrap();
    let total: u32 = world.run_system_once(|q: Query<Relation<Owes>>| {
        q.iter().flat_map(|r| r.data().iter().map(|o| o.0)).sum()
    });
    assert_eq!(total, 10);
    let mut q = world.query::<(Entity, &Children)>();
    let rows: Vec<(Entity, Vec<Entity>)> = q.iter(&world).map(|(e, c)| (e, c.to_vec())).collect();
    assert_eq!(rows, [(e[1], vec![e[2]])]);
    let mut debtors =
        world.query_filtered::<Entity, (With<Relation<Owes>>, Without<Relation<ChildOf>>)>();
    let mut d: Vec<Entity> = debtors.iter(&world).collect();
    d.sort();
    assert_eq!(d, [e[0], e[3]]);
    let mut either = world.query_filtered::<Entity, Or<(With<Sources<Owes>>, With<Children>)>>();
    let mut d: Vec<Entity> = either.iter(&world).collect();
    d.sort();
    assert_eq!(d, [e[1], e[2], e[3]]);
    world.unrelate_all::<Owes>(e[0]);
    let mut d: Vec<Entity> = debtors.iter(&world).collect();
    d.sort();
    assert_eq!(d, [e[3]]);
    let mut opt = world.query::<(Entity, Option<Relation<Owes>>)>();
    let with: Vec<Entity> = opt
        .iter(&world)
        .filter(|(_, r)| r.is_some())
        .map(|(e, _)| e)
        .collect();
    assert_eq!(with, [e[3]]);
}

// ----- commands ----------------------------------------------------------------------

#[test]
fn commands_on_entities_that_die_earlier_in_the_same_buffer() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    world.add_child(e[0], e[1]).unwrap();
    world.add_child(e[1], e[2]).unwrap();
    let mut commands = CommandBuffer::new(&world);
    commands.despawn_recursive(e[1]);
    commands.relate(e[2], e[3], Likes);
    commands.add_child(e[3], e[2]);
    commands.unrelate::<Likes>(e[2], e[3]);
    commands.despawn_descendants(e[1]);
    commands.despawn_recursive(e[2]);
    commands.relate(e[3], e[0], Likes); // fine
    let errors = commands.apply(&mut world).unwrap_err();
    assert_eq!(errors.len(), 5, "{errors:?}");
    world.check_invariants();
    assert!(world.contains(e[0]) && world.contains(e[3]));
    assert!(!world.contains(e[1]) && !world.contains(e[2]));
    assert_eq!(world.targets::<Likes>(e[3]), [e[0]]);
    assert!(world.children(e[0]).is_empty());
}

#[test]
fn a_command_spawned_child_of_a_parent_despawned_earlier_in_the_buffer() {
    let mut world = World::new();
    let p = world.spawn(());
    let kid = world.run_system_once(move |mut commands: Commands| {
        commands.despawn(p);
        commands.spawn_child(p, Name("orphan"))
    });
    world.check_invariants();
    assert!(!world.contains(p));
    // The spawn command of `(Name, ChildOf(p))`: its parent is gone when it
    // applies, so it reports the error and spawns nothing (its held id is
    // given up), as `commands.spawn((.., ChildOf(gone)))` does.
    assert!(!world.contains(kid));
    assert_eq!(world.len(), 0);
}

// ----- observers ---------------------------------------------------------------------

#[test]
fn observers_that_relate_unrelate_and_despawn_in_turn() {
    let mut world = World::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    // Each Likes edge a -> b makes b like a back (once).
    world.observe(move |t: Trigger<OnRelate<Likes>>, mut w: DeferredWorld| {
        let (s, tg) = (t.event().source, t.event().target);
        l.lock().unwrap().push(("relate", s, tg));
        w.commands().relate(tg, s, Likes);
    });
    let l = log.clone();
    // Unliking: the other side unlikes too, and a self-like despawns.
    world.observe(move |t: Trigger<OnUnrelate<Likes>>, mut w: DeferredWorld| {
        let (s, tg) = (t.event().source, t.event().target);
        l.lock().unwrap().push(("unrelate", s, tg));
        w.commands().unrelate::<Likes>(tg, s);
    });
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Likes).unwrap();
    world.check_invariants();
    assert!(world.has_relation::<Likes>(e[0], e[1]));
    assert!(world.has_relation::<Likes>(e[1], e[0]));
    world.unrelate::<Likes>(e[0], e[1]).unwrap();
    world.check_invariants();
    assert!(world.targets::<Likes>(e[1]).is_empty());
    world.relate(e[2], e[0], Likes).unwrap();
    world.despawn(e[0]).unwrap();
    world.check_invariants();
    assert!(world.targets::<Likes>(e[2]).is_empty());
    assert!(world.sources::<Likes>(e[2]).is_empty());
    let log = log.lock().unwrap();
    assert_eq!(log.iter().filter(|x| x.0 == "relate").count(), 4);
}

#[test]
fn an_unrelate_observer_that_despawns_the_other_end() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnUnrelate<ChildOf>>, mut w: DeferredWorld| {
        // Losing a parent is fatal.
        w.commands().despawn(t.event().source);
    });
    let root = world.spawn(());
    let a = world.spawn_child(root, ()).unwrap();
    let b = world.spawn_child(a, ()).unwrap();
    let c = world.spawn_child(b, ()).unwrap();
    world.despawn(root).unwrap();
    world.check_invariants();
    assert!(
        world.is_empty(),
        "each orphan despawned in turn: {}",
        world.len()
    );
    let _ = c;
}

#[test]
fn parent_first_cache_after_every_kind_of_edit() {
    let mut world = World::new();
    let mut order = ParentFirst::<ChildOf>::new();
    let check = |order: &mut ParentFirst<ChildOf>, world: &World| {
        let got = order.get(world).to_vec();
        let fresh = world.parent_first::<ChildOf>();
        let mut a = got.clone();
        let mut b = fresh.clone();
        a.sort();
        b.sort();
        assert_eq!(a, b, "cached order has the same entities as a fresh one");
        for (i, &e) in got.iter().enumerate() {
            if let Some(p) = world.parent(e) {
                assert!(got[..i].contains(&p), "{p:?} before {e:?}");
            }
        }
    };
    let r = world.spawn(());
    check(&mut order, &world);
    let a = world.spawn_child(r, ()).unwrap();
    check(&mut order, &world);
    let b = world.spawn_child(a, ()).unwrap();
    check(&mut order, &world);
    let x = world.spawn(());
    world.set_parent(a, x).unwrap();
    check(&mut order, &world);
    world.remove_parent(a).unwrap();
    check(&mut order, &world);
    world.add_child(b, r).unwrap();
    check(&mut order, &world);
    let copy = world.clone_entity(r).unwrap();
    check(&mut order, &world);
    assert!(order.get(&world).contains(&copy));
    world.despawn(a).unwrap();
    check(&mut order, &world);
    let c = world.spawn_child(x, ()).unwrap();
    world.spawn_child(c, ()).unwrap();
    check(&mut order, &world);
    world.despawn_descendants(x).unwrap();
    check(&mut order, &world);
    world.spawn_child(x, ()).unwrap();
    world.despawn_recursive(x).unwrap();
    check(&mut order, &world);
    let t = world.spawn_child(b, ()).unwrap();
    world.take(t).unwrap();
    check(&mut order, &world);
    world.clear();
    check(&mut order, &world);
    assert!(order.get(&world).is_empty());
}

/// `OnUnrelate` is documented to fire for every edge a despawn removes; a
/// recursive despawn removed the subtree's inner `ChildOf` edges silently.
#[test]
fn despawn_recursive_announces_every_child_of_edge_it_removes() {
    let heard = |how: &str| {
        let mut world = World::new();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        world.observe(move |t: Trigger<OnUnrelate<ChildOf>>, _w: DeferredWorld| {
            h.lock().unwrap().push((t.event().source, t.event().target));
        });
        let top = world.spawn(());
        let root = world.spawn_child(top, ()).unwrap();
        let a = world.spawn_child(root, ()).unwrap();
        let b = world.spawn_child(root, ()).unwrap();
        let c = world.spawn_child(a, ()).unwrap();
        match how {
            "recursive" => world.despawn_recursive(root).unwrap(),
            "descendants" => {
                world.despawn_descendants(top).unwrap();
            }
            _ => {
                for e in [c, a, b, root] {
                    world.despawn(e).unwrap();
                }
            }
        }
        world.check_invariants();
        assert_eq!(world.len(), 1);
        let mut v = heard.lock().unwrap().clone();
        v.sort();
        assert_eq!(v.len(), 4, "{how}: {v:?}");
        v
    };
    let one_by_one = heard("one by one");
    assert_eq!(heard("recursive"), one_by_one);
    assert_eq!(heard("descendants"), one_by_one);
}

/// A despawn policy firing inside one child's subtree doomed a later
/// sibling, which then went by a plain despawn between subtrees: its own
/// children were left alive, as roots, though descendants.
#[test]
fn despawn_descendants_takes_a_subtree_whose_root_a_policy_doomed_first() {
    let mut world = World::new();
    let keep = world.spawn(Name("keep"));
    let c1 = world.spawn_child(keep, Name("c1")).unwrap();
    let c1k = world.spawn_child(c1, Name("c1k")).unwrap();
    let c2 = world.spawn_child(keep, Name("c2")).unwrap();
    let c2k = world.spawn_child(c2, Name("c2k")).unwrap();
    // c2 is owned by c1's child: c1's subtree going dooms c2.
    world.relate(c2, c1k, OwnedBy).unwrap();
    world.despawn_descendants(keep).unwrap();
    world.check_invariants();
    assert!(world.children(keep).is_empty());
    for e in [c1, c1k, c2, c2k] {
        assert!(!world.contains(e), "{:?} survived", world.get::<Name>(e));
    }
    assert_eq!(world.len(), 1);
}

#[test]
fn an_observer_moving_orphans_to_their_grandparent() {
    let mut world = World::new();
    // A common pattern: when a parent goes, its children move up a level.
    world.observe(|t: Trigger<OnUnrelate<ChildOf>>, mut w: DeferredWorld| {
        let (child, parent) = (t.event().source, t.event().target);
        if let Some(gp) = w.world().parent(parent) {
            w.commands().add_child(gp, child);
        }
    });
    let g = world.spawn(());
    let p = world.spawn_child(g, ()).unwrap();
    let c = world.spawn_child(p, ()).unwrap();
    world.despawn(p).unwrap();
    world.check_invariants();
    assert_eq!(world.parent(c), Some(g));
    let p2 = world.spawn_child(g, ()).unwrap();
    let c2 = world.spawn_child(p2, ()).unwrap();
    world.spawn_child(c2, ()).unwrap();
    world.despawn_recursive(p2).unwrap();
    world.check_invariants();
    assert_eq!(world.children(g), [c]);
    assert_eq!(world.len(), 2);
}

/// `World::clear` despawns every entity, announcing their removal and
/// despawn, but removed every edge without a word to `OnUnrelate`
/// observers (documented to hear every edge a despawn removes).
#[test]
fn clear_announces_every_edge_it_removes() {
    let mut world = World::new();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    world.observe(move |t: Trigger<OnUnrelate<Likes>>, w: DeferredWorld| {
        // Heard before anything goes: both ends still readable.
        let ends = (
            w.world().contains(t.event().source),
            w.world().contains(t.event().target),
        );
        h.lock()
            .unwrap()
            .push((t.event().source, t.event().target, ends));
    });
    let h = heard.clone();
    world.observe(
        move |t: Trigger<OnUnrelate<ChildOf>>, mut w: DeferredWorld| {
            h.lock()
                .unwrap()
                .push((t.event().source, t.event().target, (true, true)));
            // A command of an observer runs after the clear: its entity is gone.
            w.commands().despawn(t.event().source);
        },
    );
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[0], e[2], Likes).unwrap();
    world.relate(e[2], e[2], Likes).unwrap();
    world.add_child(e[1], e[2]).unwrap();
    world.clear();
    world.check_invariants();
    assert!(world.is_empty());
    let mut got = heard.lock().unwrap().clone();
    got.sort();
    let mut want = vec![
        (e[0], e[1], (true, true)),
        (e[0], e[2], (true, true)),
        (e[2], e[2], (true, true)),
        (e[2], e[1], (true, true)),
    ];
    want.sort();
    assert_eq!(got, want);
    // Nothing is heard twice, nor after.
    world.clear();
    assert_eq!(heard.lock().unwrap().len(), 4);
}

#[test]
fn clear_with_a_panicking_unrelate_observer_clears_nothing() {
    let mut world = World::new();
    world.observe(|_t: Trigger<OnUnrelate<Likes>>, mut w: DeferredWorld| {
        w.commands().spawn(Name("never"));
        panic!("no");
    });
    let e = spawn_n(&mut world, 2);
    world.relate(e[0], e[1], Likes).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.clear()));
    assert!(r.is_err());
    world.check_invariants();
    assert_eq!(world.len(), 2);
    assert_eq!(world.targets::<Likes>(e[0]), [e[1]]);
    assert_eq!(world.query::<&Name>().iter(&world).count(), 0);
}

/// `spawn_child` is one change, the spawn of `(bundle, ChildOf(parent))`:
/// the child's spawn observer sees it with its parent, and what that
/// observer's commands do afterwards (despawn the parent) follows the
/// whole spawn, as after `world.spawn((.., ChildOf(parent)))`: the child
/// stays, a root, and its handle is returned. (Before, the edge came after
/// the spawn's announcements; the observer saw a root, and its despawn of
/// the parent made `spawn_child` despawn the child again.)
#[test]
fn spawn_child_whose_spawn_observer_despawns_the_parent_keeps_the_child_a_root() {
    #[derive(Resource, Default)]
    struct SawParent(Vec<Option<Entity>>);
    let mut world = World::new();
    world.init_resource::<SawParent>();
    let parent = world.spawn(());
    world.observe(move |t: Trigger<OnAdd<Name>>, mut w: DeferredWorld| {
        let seen = w.world().parent(t.target());
        w.resource_mut::<SawParent>().0.push(seen);
        w.commands().despawn(parent);
    });
    let kid = world.spawn_child(parent, Name("kid")).unwrap();
    world.check_invariants();
    assert_eq!(world.resource::<SawParent>().0, [Some(parent)]);
    assert!(!world.contains(parent));
    assert!(world.contains(kid));
    assert_eq!(world.parent(kid), None);
    assert_eq!(world.len(), 1);
}

#[test]
fn parent_first_leaves_out_cycles_and_what_waits_on_them() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[1], e[0], Likes).unwrap();
    world.relate(e[2], e[0], Likes).unwrap();
    world.relate(e[3], e[2], Likes).unwrap();
    // e[2] and e[3] are on no cycle, but each waits for a target on one.
    assert_eq!(world.parent_first::<Likes>(), Vec::<Entity>::new());
    world.unrelate::<Likes>(e[1], e[0]).unwrap();
    assert_eq!(world.parent_first::<Likes>(), [e[1], e[0], e[2], e[3]]);
}

#[test]
fn entity_world_mut_after_its_entity_went_by_a_policy() {
    let mut world = World::new();
    let keep = world.spawn(());
    let kid = world.spawn_child(keep, ()).unwrap();
    world.relate(keep, kid, OwnedBy).unwrap();
    let mut e = world.entity_mut(keep).unwrap();
    e.despawn_descendants().unwrap();
    assert!(e.insert(Name("x")).is_err());
    let r = e.relate(kid, Likes);
    assert!(r.is_err());
    let r = e.add_child(kid);
    assert!(r.is_err());
    e.with_children(|c| {
        c.spawn(());
    });
    world.check_invariants();
    assert_eq!(world.len(), 0);
}

/// Random worlds with every policy at once, with and without an observer of
/// `OnUnrelate<ChildOf>` (which changes how a recursive despawn runs): a
/// recursive despawn takes every descendant or, refused, changes nothing;
/// so does `despawn_descendants`; no edge ever names a dead entity.
#[test]
fn random_worlds_with_every_policy_keep_their_promises() {
    let (seeds, steps) = if cfg!(miri) { (1, 50) } else { (16, 400) };
    for seed in 0..seeds {
        let mut rng = Lcg(seed * 104729 + 3);
        let mut world = World::new();
        let heard = Arc::new(Mutex::new(0usize));
        if seed % 2 == 1 {
            let h = heard.clone();
            world.observe(move |_t: Trigger<OnUnrelate<ChildOf>>, _w: DeferredWorld| {
                *h.lock().unwrap() += 1;
            });
        }
        let mut pool = spawn_n(&mut world, 30);
        for _ in 0..steps {
            pool.retain(|&e| world.contains(e));
            if pool.len() < 8 {
                pool.extend(spawn_n(&mut world, 10));
            }
            let n = pool.len();
            let (a, b) = (pool[rng.below(n)], pool[rng.below(n)]);
            match rng.below(12) {
                0..=3 => {
                    let _ = world.add_child(a, b);
                }
                4 => {
                    let _ = world.relate(a, b, OwnedBy);
                }
                5 => {
                    let _ = world.relate(a, b, PartOf);
                }
                6 if rng.below(3) == 0 => {
                    let _ = world.relate(a, b, DependsOn);
                }
                6 => {
                    let _ = world.unrelate_all::<DependsOn>(a);
                }
                7 => {
                    let _ = world.despawn(a);
                }
                8 | 9 => {
                    let below: Vec<Entity> = world.descendants(a).collect();
                    let len = world.len();
                    match world.despawn_recursive(a) {
                        Ok(()) => {
                            assert!(!world.contains(a));
                            for d in below {
                                assert!(!world.contains(d), "seed {seed}: {d:?} survived");
                            }
                        }
                        Err(EntityError::DespawnRefused { .. }) => assert_eq!(world.len(), len),
                        Err(e) => panic!("{e}"),
                    }
                }
                _ => {
                    let below: Vec<Entity> = world.descendants(a).collect();
                    let len = world.len();
                    match world.despawn_descendants(a) {
                        Ok(()) => {
                            assert!(world.children(a).is_empty());
                            for d in below {
                                assert!(!world.contains(d), "seed {seed}: {d:?} survived");
                            }
                        }
                        Err(EntityError::DespawnRefused { .. }) => assert_eq!(world.len(), len),
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            world.check_invariants();
        }
    }
}

/// While a recursive despawn skipped the subtree's `ChildOf` cleanup, an
/// observer's command ran between two entities: its despawn of an entity
/// outside the subtree skipped the cleanup too, leaving a survivor's
/// `Children` naming a dead entity (and the next edit of it panicking).
#[test]
fn an_observer_despawning_an_outsider_during_a_recursive_despawn() {
    #[derive(Component)]
    struct Bomb(Entity);
    let mut world = World::new();
    world.observe(|t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        if let Ok(bomb) = w.get::<Bomb>(t.entity().unwrap()) {
            let victim = bomb.0;
            w.commands().despawn(victim);
        }
    });
    let survivor = world.spawn(());
    let outsider = world.spawn_child(survivor, ()).unwrap();
    let other = world.spawn_child(survivor, ()).unwrap();
    let root = world.spawn(());
    world.spawn_child(root, Bomb(outsider)).unwrap();
    world.despawn_recursive(root).unwrap();
    world.check_invariants();
    assert!(!world.contains(outsider));
    assert_eq!(world.children(survivor), [other]);
}

/// The same skip let an observer's `remove_parent` of a subtree entity
/// not yet despawned meet a sibling already dead in its parent's list:
/// a "relation invariant" panic.
#[test]
fn an_observer_unparenting_a_sibling_during_a_recursive_despawn() {
    #[derive(Component)]
    struct Loner(Entity);
    let mut world = World::new();
    world.observe(|t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        if let Ok(l) = w.get::<Loner>(t.entity().unwrap()) {
            let sibling = l.0;
            w.commands().run(move |world| {
                let _ = world.remove_parent(sibling);
            });
        }
    });
    let root = world.spawn(());
    let kids: Vec<Entity> = (0..3)
        .map(|_| world.spawn_child(root, ()).unwrap())
        .collect();
    world.insert(kids[2], Loner(kids[0])).unwrap();
    world.despawn_recursive(root).unwrap();
    world.check_invariants();
    assert!(world.is_empty(), "the subtree went whole: {}", world.len());
}

/// A hook or observer running during a recursive despawn reads the
/// hierarchy as it is: the children already despawned are no longer
/// listed (no edge ever names a dead entity), as with plain despawns.
#[test]
fn observers_during_a_recursive_despawn_never_read_a_dead_relative() {
    for lifecycle in [true, false] {
        let mut world = World::new();
        let bad = Arc::new(Mutex::new(Vec::new()));
        let look = |bad: &Arc<Mutex<Vec<(Entity, Entity)>>>, world: &World, e: Entity| {
            let mut named: Vec<Entity> = world.children(e).to_vec();
            named.extend(world.parent(e));
            named.extend(world.sources::<Likes>(e));
            for x in named {
                if !world.contains(x) {
                    bad.lock().unwrap().push((e, x));
                }
            }
        };
        let b = bad.clone();
        if lifecycle {
            world.observe(move |t: Trigger<OnDespawn>, w: DeferredWorld| {
                look(&b, w.world(), t.entity().unwrap());
            });
        } else {
            // Not a lifecycle observer: an edge of another relation going.
            world.observe(move |t: Trigger<OnUnrelate<Likes>>, w: DeferredWorld| {
                look(&b, w.world(), t.event().target);
                look(&b, w.world(), t.event().source);
            });
        }
        let root = world.spawn(());
        let a = world.spawn_child(root, ()).unwrap();
        let b1 = world.spawn_child(a, ()).unwrap();
        let b2 = world.spawn_child(a, ()).unwrap();
        world.spawn_child(root, ()).unwrap();
        world.relate(b1, a, Likes).unwrap();
        world.relate(root, b2, Likes).unwrap();
        world.despawn_recursive(root).unwrap();
        world.check_invariants();
        assert!(world.is_empty());
        assert_eq!(
            *bad.lock().unwrap(),
            Vec::<(Entity, Entity)>::new(),
            "lifecycle: {lifecycle}"
        );
    }
}

#[test]
fn take_and_spawn_at_apply_the_despawn_policies() {
    let mut world = World::new();
    let owner = world.spawn(Name("owner"));
    let owned = world.spawn(Name("owned"));
    let kid = world.spawn_child(owner, Name("kid")).unwrap();
    world.relate(owned, owner, OwnedBy).unwrap();
    let taken = world.take(owner).unwrap();
    world.check_invariants();
    assert!(!world.contains(owned), "owned by what was taken");
    assert_eq!(world.parent(kid), None);
    let back = world.spawn(taken);
    assert!(world.children(back).is_empty());

    // spawn_at over an owner: its owned go, its dependants refuse.
    let owned = world.spawn(());
    world.relate(owned, back, OwnedBy).unwrap();
    world.spawn_at(back, Name("replaced"));
    world.check_invariants();
    assert!(!world.contains(owned));
    assert_eq!(world.get::<Name>(back), Ok(&Name("replaced")));
    let user = world.spawn(());
    world.relate(user, back, DependsOn).unwrap();
    assert_eq!(
        world.take(back).err(),
        Some(EntityError::DespawnRefused {
            entity: back,
            relation: "DependsOn"
        })
    );
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn_at(back, Name("again"));
    }));
    let msg = r.unwrap_err();
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("DependsOn"), "{msg}");
    world.check_invariants();
    assert_eq!(world.get::<Name>(back), Ok(&Name("replaced")));
}
