//! Derive macros for the [mosaic](https://docs.rs/mosaic-ecs) ECS.
//!
//! Use them through `mosaic` (`use mosaic::prelude::*;`), not directly: the
//! generated code names items as `::mosaic::…`.
//!
//! - `#[derive(Component)]`, with an optional
//!   `#[component(storage = "sparse")]` (or `"table"`, the default);
//! - `#[derive(Bundle)]` on a struct whose every field is a bundle.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitStr};

/// Implements `mosaic::Component`. See the `Component` trait for the options.
#[proc_macro_derive(Component, attributes(component))]
pub fn derive_component(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match component_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn component_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let storage = storage_attr(input)?;
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::mosaic::Component for #name #ty_generics #where_clause {
            const STORAGE: ::mosaic::StorageType = #storage;
        }
    })
}

/// Reads `#[component(storage = "...")]`; table storage when absent.
fn storage_attr(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let mut storage = quote!(::mosaic::StorageType::Table);
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("component"))
    {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("storage") {
                return Err(meta.error("unknown component option; expected `storage = \"table\"` or `storage = \"sparse\"`"));
            }
            let value: LitStr = meta.value()?.parse()?;
            storage = match value.value().as_str() {
                "table" => quote!(::mosaic::StorageType::Table),
                "sparse" => quote!(::mosaic::StorageType::SparseSet),
                other => {
                    return Err(syn::Error::new(
                        value.span(),
                        format!("unknown storage `{other}`; expected \"table\" or \"sparse\""),
                    ))
                }
            };
            Ok(())
        })?;
    }
    Ok(storage)
}

/// Implements `mosaic::Bundle` for a struct whose fields are all bundles.
#[proc_macro_derive(Bundle)]
pub fn derive_bundle(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match bundle_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn bundle_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "`Bundle` can only be derived for structs",
        ));
    };
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let types: Vec<_> = data.fields.iter().map(|f| &f.ty).collect();
    let members: Vec<syn::Member> = data
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| match &f.ident {
            Some(ident) => syn::Member::Named(ident.clone()),
            None => syn::Member::Unnamed(i.into()),
        })
        .collect();
    let takes = types
        .iter()
        .map(|ty| quote!(unsafe { <#ty as ::mosaic::Bundle>::take_components(reader) }));
    let build = match &data.fields {
        Fields::Named(_) => quote!(Self { #(#members: #takes,)* }),
        Fields::Unnamed(_) => quote!(Self( #(#takes,)* )),
        Fields::Unit => quote!(Self),
    };
    Ok(quote! {
        // SAFETY: every field is reported, written and taken in declaration order.
        unsafe impl #impl_generics ::mosaic::Bundle for #name #ty_generics #where_clause {
            fn component_ids(
                components: &mut ::mosaic::__macro::ComponentRegistrar<'_>,
                ids: &mut dyn ::core::ops::FnMut(::mosaic::ComponentId, ::mosaic::StorageType),
            ) {
                #(<#types as ::mosaic::Bundle>::component_ids(components, ids);)*
            }

            fn write_components<W: ::mosaic::__macro::ComponentWriter>(self, writer: &mut W) {
                #(<#types as ::mosaic::Bundle>::write_components(self.#members, writer);)*
            }

            #[allow(unused_variables)]
            unsafe fn take_components<R: ::mosaic::__macro::ComponentReader>(reader: &mut R) -> Self {
                // SAFETY: forwarded: fields are taken in `component_ids` order.
                #build
            }
        }
    })
}
