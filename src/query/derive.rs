//! Support for `#[derive(QueryData)]`: how a field's query item becomes the
//! field's value.
//!
//! A derived query's item is the struct itself (at the borrow's lifetime),
//! built from the items of the tuple of its field types. Most field types
//! are their own item at that lifetime (`&'w T`, `&'w mut T`, `Entity`,
//! `Option<&'w T>`, `Ref<'w, T>`, tuples of those, other derived structs);
//! [`Has<T>`](crate::Has) yields a `bool` that the field wraps back.

use super::fetch::Has;

/// Turns a field's query item into the field's value. Not public API: the
/// derive's generated code calls it.
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

impl<T> FromQueryItem<T> for T {
    #[inline(always)]
    fn from_query_item(item: T) -> T {
        item
    }
}

impl<T> FromQueryItem<bool> for Has<T> {
    #[inline(always)]
    fn from_query_item(present: bool) -> Has<T> {
        Has::from(present)
    }
}
