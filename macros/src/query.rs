//! `#[derive(QueryData)]` and `#[derive(QueryFilter)]`: named-field queries.
//!
//! Both derives add no fetch logic of their own. A derived query is the
//! tuple of its field types under another name: every hidden method and
//! constant of the trait forwards to the tuple's implementation, so the
//! struct borrows exactly what the tuple would, matches the same archetypes
//! and takes the same fast paths. The only code of the data derive's own is
//! moving the tuple's item into the struct's fields.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

/// The tuple impls of the core stop at this many elements; longer field
/// lists are grouped into nested tuples.
const MAX_TUPLE: usize = 16;

/// The type and the matching pattern of `items` grouped as nested tuples
/// of at most [`MAX_TUPLE`] elements each.
fn nested_tuple(items: Vec<TokenStream2>) -> TokenStream2 {
    if items.len() <= MAX_TUPLE {
        return quote!((#(#items,)*));
    }
    let groups: Vec<TokenStream2> = items
        .chunks(MAX_TUPLE)
        .map(|chunk| quote!((#(#chunk,)*)))
        .collect();
    nested_tuple(groups)
}

/// The fields of a struct input, or an error naming the derive.
/// The methods `QueryData` and `QueryFilter` share (state, access,
/// matching, fetch set-up), each forwarded to `q`, the field tuple's
/// implementation of the trait being derived.
fn forwarded_methods(q: &TokenStream2) -> TokenStream2 {
    quote! {
        fn init_state(world: &mut ::mosaic::World) -> Self::State {
            #q::init_state(world)
        }

        fn update_access(state: &Self::State, access: &mut ::mosaic::Access) {
            #q::update_access(state, access)
        }

        fn match_archetype(
            state: &Self::State,
            archetype: &::mosaic::Archetype,
        ) -> ::core::option::Option<Self::ArchetypeState> {
            #q::match_archetype(state, archetype)
        }

        #[inline]
        unsafe fn init_fetch<'__w>(
            world: &'__w ::mosaic::World,
            state: &Self::State,
            ticks: ::mosaic::__macro::TickRange,
        ) -> Self::Fetch<'__w> {
            // SAFETY: forwarded contract.
            unsafe { #q::init_fetch(world, state, ticks) }
        }

        #[inline]
        unsafe fn set_archetype<'__w>(
            fetch: &mut Self::Fetch<'__w>,
            state: &Self::State,
            arch: Self::ArchetypeState,
            archetype: &'__w ::mosaic::Archetype,
        ) {
            // SAFETY: forwarded contract.
            unsafe { #q::set_archetype(fetch, state, arch, archetype) }
        }
    }
}

fn struct_fields<'a>(input: &'a DeriveInput, derive: &str) -> syn::Result<&'a Fields> {
    match &input.data {
        Data::Struct(data) => Ok(&data.fields),
        _ => Err(syn::Error::new(
            input.ident.span(),
            format!("`#[derive({derive})]` needs a struct"),
        )),
    }
}

pub(crate) fn query_data_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let fields = struct_fields(input, "QueryData")?;
    let lifetimes: Vec<&syn::LifetimeParam> = input.generics.lifetimes().collect();
    if lifetimes.len() > 1 {
        return Err(syn::Error::new(
            lifetimes[1].span(),
            "a `#[derive(QueryData)]` struct takes at most one lifetime: the world borrow its \
             references live for (`struct Mover<'w> { pos: &'w mut Position }`)",
        ));
    }
    // The item: the struct itself, its lifetime (if any) renamed to the
    // item's.
    let item_args: Vec<TokenStream2> = input
        .generics
        .params
        .iter()
        .map(|param| match param {
            syn::GenericParam::Lifetime(_) => quote!('__w),
            syn::GenericParam::Type(t) => {
                let ident = &t.ident;
                quote!(#ident)
            }
            syn::GenericParam::Const(c) => {
                let ident = &c.ident;
                quote!(#ident)
            }
        })
        .collect();
    let item = if item_args.is_empty() {
        quote!(#name)
    } else {
        quote!(#name<#(#item_args),*>)
    };

    let types: Vec<TokenStream2> = fields
        .iter()
        .map(|f| {
            let ty = &f.ty;
            quote!(#ty)
        })
        .collect();
    let vars: Vec<syn::Ident> = (0..types.len())
        .map(|i| syn::Ident::new(&format!("__mosaic_field_{i}"), Span::call_site()))
        .collect();
    let tuple = nested_tuple(types);
    let pattern = nested_tuple(vars.iter().map(|v| quote!(#v)).collect());
    let values: Vec<TokenStream2> = fields
        .iter()
        .zip(&vars)
        .map(|(f, var)| {
            // The field's own span, so a field type that is not its own
            // item is reported at the field.
            quote::quote_spanned!(f.ty.span()=> ::mosaic::__macro::FromQueryItem::from_query_item(#var))
        })
        .collect();
    let build = match fields {
        Fields::Named(named) => {
            let names = named.named.iter().map(|f| f.ident.as_ref().expect("named"));
            quote!(#name { #(#names: #values,)* })
        }
        Fields::Unnamed(_) => quote!(#name( #(#values,)* )),
        Fields::Unit => quote!(#name),
    };

    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let read_only_where = {
        let mut generics = input.generics.clone();
        generics
            .make_where_clause()
            .predicates
            .push(syn::parse_quote!(#tuple: ::mosaic::ReadOnlyQueryData));
        generics.where_clause
    };
    let q = quote!(<#tuple as ::mosaic::QueryData>);
    let shared = forwarded_methods(&q);
    Ok(quote! {
        // SAFETY: sound by construction: the struct is the tuple of its
        // field types under another name. Every method and constant
        // forwards to the tuple's implementation (its access, matching,
        // fetches and fast paths), with the same state and fetch; the one
        // step of its own is moving the tuple's item into the fields.
        #[allow(unsafe_code)]
        #[automatically_derived]
        unsafe impl #impl_generics ::mosaic::QueryData for #name #ty_generics #where_clause {
            type Item<'__w> = #item;
            type Fetch<'__w> = #q::Fetch<'__w>;
            type State = #q::State;
            type ArchetypeState = #q::ArchetypeState;
            const DENSE: bool = #q::DENSE;
            const FALLIBLE: bool = #q::FALLIBLE;
            const WRITES_ON_FETCH: bool = #q::WRITES_ON_FETCH;
            const ODD_SIZED: bool = #q::ODD_SIZED;
            const POW2_SIZED: bool = #q::POW2_SIZED;

            #shared

            #[inline(always)]
            unsafe fn can_fetch(fetch: &Self::Fetch<'_>, entity: ::mosaic::Entity) -> bool {
                // SAFETY: forwarded contract.
                unsafe { #q::can_fetch(fetch, entity) }
            }

            #[inline]
            unsafe fn set_driver(
                fetch: &mut Self::Fetch<'_>,
                state: &Self::State,
                driver: ::mosaic::ComponentId,
            ) {
                // SAFETY: forwarded contract (`DENSE` is the tuple's).
                unsafe { #q::set_driver(fetch, state, driver) }
            }

            #[inline(always)]
            unsafe fn fetch<'__w>(
                fetch: &mut Self::Fetch<'__w>,
                entity: ::mosaic::Entity,
                row: usize,
            ) -> ::core::option::Option<Self::Item<'__w>> {
                // SAFETY: forwarded contract.
                let #pattern = unsafe { #q::fetch(fetch, entity, row) }?;
                ::core::option::Option::Some(#build)
            }

            #[inline(always)]
            unsafe fn fetch_unstamped<'__w>(
                fetch: &mut Self::Fetch<'__w>,
                entity: ::mosaic::Entity,
                row: usize,
            ) -> ::core::option::Option<Self::Item<'__w>> {
                // SAFETY: forwarded contract.
                let #pattern = unsafe { #q::fetch_unstamped(fetch, entity, row) }?;
                ::core::option::Option::Some(#build)
            }

            #[inline(always)]
            unsafe fn stamp_rows(
                fetch: &mut Self::Fetch<'_>,
                rows: ::core::ops::Range<usize>,
            ) {
                // SAFETY: forwarded contract.
                unsafe { #q::stamp_rows(fetch, rows) }
            }

            #[inline(always)]
            fn tracks(fetch: &Self::Fetch<'_>) -> bool {
                #q::tracks(fetch)
            }

            #[inline(always)]
            fn writes_ticks(fetch: &Self::Fetch<'_>) -> bool {
                #q::writes_ticks(fetch)
            }
        }

        // SAFETY: the tuple of the field types records no write (the
        // where-clause), and the struct's access is the tuple's.
        #[allow(unsafe_code)]
        #[automatically_derived]
        unsafe impl #impl_generics ::mosaic::ReadOnlyQueryData for #name #ty_generics #read_only_where {}

        // The struct is its own item: as a field of another derived query,
        // it is moved as is.
        #[automatically_derived]
        impl #impl_generics ::mosaic::__macro::FromQueryItem<#name #ty_generics> for #name #ty_generics #where_clause {
            #[inline(always)]
            fn from_query_item(item: Self) -> Self {
                item
            }
        }
    })
}

pub(crate) fn query_filter_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let fields = struct_fields(input, "QueryFilter")?;
    let types: Vec<TokenStream2> = fields
        .iter()
        .map(|f| {
            let ty = &f.ty;
            quote!(#ty)
        })
        .collect();
    let tuple = nested_tuple(types);
    let q = quote!(<#tuple as ::mosaic::QueryFilter>);
    let shared = forwarded_methods(&q);
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    // A filter struct is never built and its fields never read: this
    // reads them, in a function that is never called, so the compiler's
    // dead-code lint does not ask the user about them.
    let members = fields.iter().enumerate().map(|(i, f)| match &f.ident {
        Some(ident) => syn::Member::Named(ident.clone()),
        None => syn::Member::Unnamed(i.into()),
    });
    Ok(quote! {
        const _: () = {
            #[allow(dead_code, clippy::extra_unused_type_parameters)]
            fn __mosaic_filter_fields #impl_generics (filter: &#name #ty_generics) #where_clause {
                let _ = (#(&filter.#members,)*);
            }
        };

        // SAFETY: sound by construction: the struct is the tuple of its
        // field types (all must hold) under another name, and every method
        // and constant forwards to the tuple's implementation.
        #[allow(unsafe_code)]
        #[automatically_derived]
        unsafe impl #impl_generics ::mosaic::QueryFilter for #name #ty_generics #where_clause {
            type Fetch<'__w> = #q::Fetch<'__w>;
            type State = #q::State;
            type ArchetypeState = #q::ArchetypeState;
            const ALWAYS_TRUE: bool = #q::ALWAYS_TRUE;
            const IS_ARCHETYPAL: bool = #q::IS_ARCHETYPAL;

            #shared

            #[inline(always)]
            unsafe fn filter(
                fetch: &mut Self::Fetch<'_>,
                entity: ::mosaic::Entity,
                row: usize,
            ) -> bool {
                // SAFETY: forwarded contract.
                unsafe { #q::filter(fetch, entity, row) }
            }
        }
    })
}
