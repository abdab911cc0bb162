//! Fixtures shared by test files (each includes this as `mod common;`;
//! this folder is no test target of its own, and holds no `#[test]`):
//!
//! - here, for the query and change-detection tests: three table and three
//!   sparse components that each hold one number, and `storage_combos!`;
//! - [`panics`]: a panic's message;
//! - [`executors`]: both executors, and a schedule on one;
//! - [`relations`]: relation types, entities and a generator for the
//!   relation tests.

#![allow(dead_code)]

pub mod executors;
pub mod panics;
pub mod relations;

use mosaic::prelude::*;

/// A component holding one number, so generic checks can build and read it.
pub trait Val: Component + Sized {
    fn new(v: u32) -> Self;
    fn v(&self) -> u32;
    fn set(&mut self, v: u32);
}

macro_rules! impl_val {
    ($($name:ident),*) => {$(
        impl Val for $name {
            fn new(v: u32) -> Self {
                $name(v)
            }
            fn v(&self) -> u32 {
                self.0
            }
            fn set(&mut self, v: u32) {
                self.0 = v;
            }
        }
    )*};
}

#[derive(Component, Debug, PartialEq, Clone, Copy)]
pub struct TA(pub u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
pub struct TB(pub u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
pub struct TC(pub u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
pub struct SA(pub u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
pub struct SB(pub u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
pub struct SC(pub u32);

impl_val!(TA, TB, TC, SA, SB, SC);

/// Runs `$check::<A, B, C>` for the four storage mixes (all table, all
/// sparse, and the two mixed ones), one test each. `A` is the component the
/// check watches; `B` and `C` are other components.
#[allow(unused_macros)] // used by query.rs and change.rs only
macro_rules! storage_combos {
    ($($module:ident => $check:ident;)*) => {$(
        mod $module {
            #[test]
            fn all_table() {
                super::$check::<super::TA, super::TB, super::TC>();
            }
            #[test]
            fn all_sparse() {
                super::$check::<super::SA, super::SB, super::SC>();
            }
            #[test]
            fn table_a_sparse_bc() {
                super::$check::<super::TA, super::SB, super::SC>();
            }
            #[test]
            fn sparse_a_table_bc() {
                super::$check::<super::SA, super::TB, super::TC>();
            }
        }
    )*};
}
