//! Support for `#[derive(QueryData)]`: how a field's query item becomes the
//! field's value.
//!
//! A derived query's item is the struct itself (at the borrow's lifetime),
//! built from the items of the tuple of its field types. Most field types
//! are their own item at that lifetime (`&'w T`, `&'w mut T`, `Entity`,
//! `Ref<'w, T>`, other derived structs); [`Has<T>`](crate::Has) yields a
//! `bool` that the field wraps back, and `Option`s and tuples convert
//! element by element, so a `Has<T>` works inside them too.

use super::fetch::Has;
use super::ref_item::Ref;
use super::tuples::all_query_tuples;
use crate::entity::Entity;

/// Turns a field's query item into the field's value. Not public API: the
/// derive's generated code calls it (and implements it, as the identity,
/// for each derived struct).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a `#[derive(QueryData)]` field of type `{Self}` cannot hold its query's item `{Item}`",
    label = "a field's query yields `{Item}`, not `{Self}`",
    note = "a derived query's fields must be their own items at the struct's lifetime: `&'w T`, `&'w mut T`, `Entity`, `Option<..>`, `Has<T>`, `Ref<'w, T>`, tuples of those, or other derived `QueryData` structs"
)]
pub trait FromQueryItem<Item> {
    /// The field's value for `item`.
    fn from_query_item(item: Item) -> Self;
}

impl<'w, T: ?Sized> FromQueryItem<&'w T> for &'w T {
    #[inline(always)]
    fn from_query_item(item: &'w T) -> Self {
        item
    }
}

impl<'w, T: ?Sized> FromQueryItem<&'w mut T> for &'w mut T {
    #[inline(always)]
    fn from_query_item(item: &'w mut T) -> Self {
        item
    }
}

impl FromQueryItem<Entity> for Entity {
    #[inline(always)]
    fn from_query_item(item: Entity) -> Self {
        item
    }
}

impl<'w, T> FromQueryItem<Ref<'w, T>> for Ref<'w, T> {
    #[inline(always)]
    fn from_query_item(item: Ref<'w, T>) -> Self {
        item
    }
}

impl<'w, T> FromQueryItem<super::Mut<'w, T>> for super::Mut<'w, T> {
    #[inline(always)]
    fn from_query_item(item: super::Mut<'w, T>) -> Self {
        item
    }
}

impl<T> FromQueryItem<bool> for Has<T> {
    #[inline(always)]
    fn from_query_item(present: bool) -> Self {
        Has::from(present)
    }
}

impl<I, T: FromQueryItem<I>> FromQueryItem<Option<I>> for Option<T> {
    #[inline(always)]
    fn from_query_item(item: Option<I>) -> Self {
        item.map(T::from_query_item)
    }
}

macro_rules! tuple_from_query_item {
    ($(($t:ident, $i:ident, $s:ident, $a:ident)),*) => {
        #[allow(non_snake_case, non_camel_case_types, clippy::unused_unit)]
        impl<$($t: FromQueryItem<$i>, $i),*> FromQueryItem<($($i,)*)> for ($($t,)*) {
            #[inline(always)]
            fn from_query_item(item: ($($i,)*)) -> Self {
                let ($($i,)*) = item;
                ($($t::from_query_item($i),)*)
            }
        }
    };
}

all_query_tuples!(tuple_from_query_item);
