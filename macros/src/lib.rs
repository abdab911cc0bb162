//! Derive macros for the [mosaic](https://docs.rs/mosaic-ecs) ECS.
//!
//! Use them through `mosaic` (`use mosaic::prelude::*;`), not directly: the
//! generated code names items as `::mosaic::…`.
//!
//! - `#[derive(Component)]`, with optional
//!   `#[component(storage = "sparse", immutable, rollback, on_add = f, on_insert = g, on_replace = h,
//!   on_remove = i, on_despawn = j)]` (storage `"table"` is the default; hooks are
//!   `fn(DeferredWorld, Entity)` or `fn(DeferredWorld, HookContext)`)
//!   and `#[require(A, B = B(5), C = make_c())]` (required components,
//!   added with `Default`, or with the expression after `=`);
//! - `#[derive(Bundle)]` on a struct whose every field is a bundle; on a
//!   generic struct it adds the `Field: Bundle` bounds itself;
//! - `#[derive(Relation)]`, with optional `#[relation(one, acyclic, on_target_despawn = "despawn")]`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr, parse_macro_input};

mod query;

/// Implements `mosaic::Component`. See the `Component` trait for the options:
/// `#[component(storage = "sparse", immutable, rollback, on_add = f, on_insert = g, on_replace = h,
/// on_remove = i, on_despawn = j)]` and `#[require(A, B = B(5), C = make_c())]`.
#[proc_macro_derive(Component, attributes(component, require))]
pub fn derive_component(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match component_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// What `#[component(..)]` and `#[require(..)]` say.
struct ComponentAttrs {
    storage: TokenStream2,
    hooks: Vec<(syn::Ident, syn::Path)>,
    required: Vec<Required>,
    /// `#[component(clone = "..")]`: "clone", "default" or "skip".
    clone: Option<LitStr>,
    /// `#[component(immutable)]`.
    immutable: bool,
    /// `#[component(rollback)]`.
    rollback: bool,
}

/// One `#[require(..)]` entry: `Type` (made with `Default`) or
/// `Type = expr` (made by evaluating `expr`).
struct Required {
    ty: syn::Type,
    make: Option<syn::Expr>,
}

impl syn::parse::Parse for Required {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let ty: syn::Type = input.parse()?;
        let make = if input.peek(syn::Token![=]) {
            input.parse::<syn::Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Required { ty, make })
    }
}

fn component_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let attrs = component_attrs(input)?;
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let storage = &attrs.storage;
    let hooks = (!attrs.hooks.is_empty()).then(|| {
        let calls = attrs.hooks.iter().map(|(kind, path)| {
            // A hook is `fn(DeferredWorld, Entity)` or, as in Bevy,
            // `fn(DeferredWorld, HookContext)`: the closure (capturing
            // nothing, so a `fn` pointer) adapts either.
            quote!(hooks.#kind(|world, entity| {
                    ::mosaic::__macro::call_hook::<Self, _>(#path, world, entity)
                });)
        });
        quote! {
            fn register_hooks(hooks: &mut ::mosaic::ComponentHooks) {
                #(#calls)*
            }
        }
    });
    let required = (!attrs.required.is_empty()).then(|| {
        let calls = attrs.required.iter().map(|r| {
            let ty = &r.ty;
            match &r.make {
                None => quote!(required.require::<#ty>();),
                Some(make) => quote!(required.require_with::<#ty>(|| -> #ty { #make });),
            }
        });
        quote! {
            fn register_required(required: &mut ::mosaic::RequiredComponents<'_>) {
                #(#calls)*
            }
        }
    });
    let clone_body = match attrs.clone.as_ref().map(LitStr::value).as_deref() {
        Some("clone") => quote!(::mosaic::CloneBehavior::Clone(
            <Self as ::core::clone::Clone>::clone
        )),
        Some("default") => quote!(::mosaic::CloneBehavior::Default(
            <Self as ::core::default::Default>::default
        )),
        Some("skip") => quote!(::mosaic::CloneBehavior::Skip),
        Some(other) => {
            return Err(syn::Error::new(
                attrs
                    .clone
                    .as_ref()
                    .map_or_else(proc_macro2::Span::call_site, LitStr::span),
                format!(
                    "unknown clone behavior `{other}`; expected \"clone\", \"default\" or \"skip\""
                ),
            ));
        }
        // A generic type cannot be probed (whether it is `Clone` depends
        // on its parameters): it is skipped unless it says otherwise.
        None if !input.generics.params.is_empty() => quote!(::mosaic::CloneBehavior::Skip),
        None => quote! {{
            #[allow(unused_imports)]
            use ::mosaic::__macro::{ViaClone as _, ViaSkip as _};
            (&&::mosaic::__macro::CloneProbe::<Self>(::core::marker::PhantomData)).clone_behavior()
        }},
    };
    let rollback = attrs.rollback.then(|| {
        quote! {
            fn rollback() -> ::core::option::Option<::mosaic::__macro::RollbackRegistration> {
                ::core::option::Option::Some(::mosaic::__macro::RollbackRegistration::of::<Self>())
            }
        }
    });
    // The checksum hashes the type through its `Hash` impl if it has one,
    // else field by field if every field can be hashed (floats by their
    // bits: see `HashFields`), else not at all. A generic type cannot be
    // probed: `World::register_rollback_hashed` is for it.
    let fields = input
        .generics
        .params
        .is_empty()
        .then(|| hash_fields(input))
        .flatten();
    let (fields_check, fields_impl) = match fields {
        Some((check, body)) => (
            quote! {
                if #check {
                    return ::core::option::Option::Some(
                        ::mosaic::__macro::RollbackHash::fields::<Self>(),
                    );
                }
            },
            quote! {
                #[automatically_derived]
                impl ::mosaic::__macro::HashFields for #name {
                    #[allow(unused_imports, unused_variables)]
                    fn hash_fields(&self, __mosaic_h: &mut dyn ::core::hash::Hasher) {
                        use ::mosaic::__macro::{
                            ViaFieldBits as _, ViaFieldHash as _, ViaFieldNone as _,
                        };
                        #body
                    }
                }
            },
        ),
        None => (quote! {}, quote! {}),
    };
    let rollback_hash = input.generics.params.is_empty().then(|| {
        quote! {
            fn rollback_hash() -> ::core::option::Option<::mosaic::__macro::RollbackHash> {
                #[allow(unused_imports)]
                use ::mosaic::__macro::{
                    ViaFieldBits as _, ViaFieldHash as _, ViaFieldNone as _, ViaHash as _,
                    ViaNoHash as _,
                };
                let whole = (&&::mosaic::__macro::HashProbe::<Self>(::core::marker::PhantomData))
                    .rollback_hash();
                if whole.is_some() {
                    return whole;
                }
                #fields_check
                ::core::option::Option::None
            }
        }
    });
    let mutable = (attrs.immutable).then(|| {
        quote!(
            const MUTABLE: bool = false;
        )
    });
    Ok(quote! {
        impl #impl_generics ::mosaic::Component for #name #ty_generics #where_clause {
            const STORAGE: ::mosaic::StorageType = #storage;
            #mutable
            #rollback
            #rollback_hash
            #hooks
            #required
            fn clone_behavior() -> ::mosaic::CloneBehavior<Self> {
                #clone_body
            }
        }
        #fields_impl
    })
}

/// For the checksum of a type that is not `Hash` (see `HashFields` in the
/// core): the test that every field of `input` can be hashed (each field
/// type probed with `FieldProbe`) and the body of `hash_fields`, which
/// feeds an enum's variant index and then each field in declaration
/// order. `None` for a union.
fn hash_fields(input: &DeriveInput) -> Option<(TokenStream2, TokenStream2)> {
    let probe = |ty: &syn::Type| quote!((&&&::mosaic::__macro::FieldProbe::<#ty>(::core::marker::PhantomData)).field_hash());
    let bind =
        |i: usize| syn::Ident::new(&format!("__mosaic_f{i}"), proc_macro2::Span::call_site());
    // A pattern binding each field of `fields` by reference, and the
    // statements hashing them.
    let fields_of = |fields: &Fields| -> (TokenStream2, Vec<TokenStream2>) {
        let calls: Vec<_> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let (probe, b) = (probe(&f.ty), bind(i));
                quote! {
                    if let ::core::option::Option::Some(f) = #probe {
                        f(#b, __mosaic_h);
                    }
                }
            })
            .collect();
        let pattern = match fields {
            Fields::Named(named) => {
                let binds = named.named.iter().enumerate().map(|(i, f)| {
                    let (ident, b) = (&f.ident, bind(i));
                    quote!(#ident: #b)
                });
                quote!({ #(#binds,)* })
            }
            Fields::Unnamed(unnamed) => {
                let binds = (0..unnamed.unnamed.len()).map(bind);
                quote!(( #(#binds,)* ))
            }
            Fields::Unit => quote!(),
        };
        (pattern, calls)
    };
    let (types, body): (Vec<&syn::Type>, TokenStream2) = match &input.data {
        Data::Struct(data) => {
            let (pattern, calls) = fields_of(&data.fields);
            (
                data.fields.iter().map(|f| &f.ty).collect(),
                quote! {
                    let Self #pattern = self;
                    #(#calls)*
                },
            )
        }
        Data::Enum(data) => {
            let arms = data.variants.iter().enumerate().map(|(index, v)| {
                let (ident, (pattern, calls)) = (&v.ident, fields_of(&v.fields));
                let index = index as u64;
                quote! {
                    Self::#ident #pattern => {
                        __mosaic_h.write_u64(#index);
                        #(#calls)*
                    }
                }
            });
            (
                data.variants
                    .iter()
                    .flat_map(|v| v.fields.iter().map(|f| &f.ty))
                    .collect(),
                quote! {
                    match self {
                        #(#arms)*
                    }
                },
            )
        }
        Data::Union(_) => return None,
    };
    let checks = types.iter().map(|ty| {
        let probe = probe(ty);
        quote!(#probe.is_some())
    });
    Some((quote!(true #(&& #checks)*), body))
}

fn component_attrs(input: &DeriveInput) -> syn::Result<ComponentAttrs> {
    let mut attrs = ComponentAttrs {
        storage: quote!(::mosaic::StorageType::Table),
        hooks: Vec::new(),
        required: Vec::new(),
        clone: None,
        immutable: false,
        rollback: false,
    };
    for attr in &input.attrs {
        if attr.path().is_ident("require") {
            let entries = attr.parse_args_with(
                syn::punctuated::Punctuated::<Required, syn::Token![,]>::parse_terminated,
            )?;
            attrs.required.extend(entries);
        } else if attr.path().is_ident("component") {
            attr.parse_nested_meta(|meta| {
                let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
                match key.as_str() {
                    "storage" => {
                        let value: LitStr = meta.value()?.parse()?;
                        attrs.storage = match value.value().as_str() {
                            "table" => quote!(::mosaic::StorageType::Table),
                            "sparse" => quote!(::mosaic::StorageType::SparseSet),
                            other => {
                                return Err(syn::Error::new(
                                    value.span(),
                                    format!("unknown storage `{other}`; expected \"table\" or \"sparse\""),
                                ))
                            }
                        };
                    }
                    "clone" => {
                        attrs.clone = Some(meta.value()?.parse()?);
                    }
                    "immutable" => attrs.immutable = true,
                    "rollback" => attrs.rollback = true,
                    "on_add" | "on_insert" | "on_remove" | "on_replace" | "on_despawn" => {
                        let path: syn::Path = meta.value()?.parse()?;
                        attrs.hooks.push((syn::Ident::new(&key, meta.path.span()), path));
                    }
                    _ => {
                        return Err(meta.error(
                            "unknown component option; expected `storage`, `clone`, `immutable`, `rollback`, `on_add`, `on_insert`, `on_replace`, `on_remove` or `on_despawn`",
                        ))
                    }
                }
                Ok(())
            })?;
        }
    }
    Ok(attrs)
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
    let types: Vec<_> = data.fields.iter().map(|f| &f.ty).collect();
    let generics = with_field_bounds(&input.generics, &types);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let members: Vec<syn::Member> = data
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| match &f.ident {
            Some(ident) => syn::Member::Named(ident.clone()),
            None => syn::Member::Unnamed(i.into()),
        })
        .collect();
    // Each field's take is its own unsafe block in the generated code:
    // SAFETY: (generated) fields are taken in declaration order, the order
    // `component_ids` reports them, so each reader position holds the
    // field's own components (the `Bundle` contract, forwarded).
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

            // A `ChildOf` field makes the spawned entity its parent's child.
            const PARENTS: usize = 0 #(+ <#types as ::mosaic::Bundle>::PARENTS)*;

            fn parent_in_bundle(&self) -> ::core::option::Option<::mosaic::Entity> {
                ::core::option::Option::None
                    #(.or_else(|| <#types as ::mosaic::Bundle>::parent_in_bundle(&self.#members)))*
            }
        }
    })
}

/// `generics` plus a `Field: ::mosaic::Bundle` bound for every field type
/// that names a type parameter, so `struct Pair<T> { a: T, b: Marker }`
/// derives without the user writing `T: Bundle` (hecs's derive does the
/// same). Fields of concrete types need no bound: they are checked as is.
fn with_field_bounds(generics: &syn::Generics, types: &[&syn::Type]) -> syn::Generics {
    let params: Vec<String> = generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    let mut generics = generics.clone();
    if params.is_empty() {
        return generics;
    }
    let clause = generics.make_where_clause();
    for ty in types {
        if names_any(quote!(#ty), &params) {
            clause
                .predicates
                .push(syn::parse_quote!(#ty: ::mosaic::Bundle));
        }
    }
    generics
}

/// True if `tokens` contain an identifier in `names` (at any depth).
fn names_any(tokens: TokenStream2, names: &[String]) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => names.iter().any(|n| ident == n),
        proc_macro2::TokenTree::Group(group) => names_any(group.stream(), names),
        _ => false,
    })
}

/// Implements `mosaic::MapEntities`: every field marked `#[entities]` (an
/// `Entity`, or an `Option`, `Vec`, array or `Box` of them, or any type that
/// implements `MapEntities`) is remapped; other fields are left alone.
/// Works on structs and enums.
#[proc_macro_derive(MapEntities, attributes(entities))]
pub fn derive_map_entities(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match map_entities_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// The pattern binding the `#[entities]` fields of `fields` (each to a
/// name that cannot collide with user names) and the statements that map
/// them. `#[entities]` takes no arguments.
fn map_fields(fields: &Fields) -> syn::Result<(TokenStream2, Vec<TokenStream2>)> {
    let marked = |f: &syn::Field| -> syn::Result<bool> {
        let mut found = false;
        for attr in f.attrs.iter().filter(|a| a.path().is_ident("entities")) {
            attr.meta.require_path_only()?;
            found = true;
        }
        Ok(found)
    };
    let binding = |i: usize| {
        syn::Ident::new(
            &format!("__mosaic_field_{i}"),
            proc_macro2::Span::call_site(),
        )
    };
    let mut calls = Vec::new();
    let pattern = match fields {
        Fields::Named(named) => {
            let mut binds = Vec::new();
            for (i, f) in named.named.iter().enumerate() {
                if marked(f)? {
                    let (ident, bind) = (&f.ident, binding(i));
                    binds.push(quote! { #ident: #bind });
                    calls.push(
                        quote! { ::mosaic::MapEntities::map_entities(#bind, __mosaic_mapper); },
                    );
                }
            }
            quote! { { #(#binds,)* .. } }
        }
        Fields::Unnamed(unnamed) => {
            let mut binds = Vec::new();
            for (i, f) in unnamed.unnamed.iter().enumerate() {
                if marked(f)? {
                    let bind = binding(i);
                    binds.push(quote! { #bind });
                    calls.push(
                        quote! { ::mosaic::MapEntities::map_entities(#bind, __mosaic_mapper); },
                    );
                } else {
                    binds.push(quote! { _ });
                }
            }
            quote! { ( #(#binds,)* ) }
        }
        Fields::Unit => quote! {},
    };
    Ok((pattern, calls))
}

fn map_entities_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let body = match &input.data {
        Data::Struct(data) => {
            let (pattern, calls) = map_fields(&data.fields)?;
            quote! {
                #[allow(unused_variables)]
                let #name #pattern = self;
                #(#calls)*
            }
        }
        Data::Enum(data) => {
            let mut arms = Vec::new();
            for v in &data.variants {
                let variant = &v.ident;
                let (pattern, calls) = map_fields(&v.fields)?;
                arms.push(quote! { #name::#variant #pattern => { #(#calls)* } });
            }
            if arms.is_empty() {
                quote! { match *self {} }
            } else {
                quote! {
                    #[allow(unused_variables)]
                    match self { #(#arms)* }
                }
            }
        }
        Data::Union(_) => {
            return Err(syn::Error::new(
                input.span(),
                "MapEntities cannot be derived for unions",
            ));
        }
    };
    Ok(quote! {
        impl #impl_generics ::mosaic::MapEntities for #name #ty_generics #where_clause {
            #[allow(unused_variables)]
            fn map_entities(&mut self, __mosaic_mapper: &mut dyn ::mosaic::EntityMapper) {
                #body
            }
        }
    })
}

/// Implements `mosaic::SystemParam` for a struct whose fields are all system
/// parameters (up to 16), so a group of parameters travels as one. Its
/// lifetimes, if any, must be named `'w` (the world's) and `'s` (the
/// system state's), as in `Query<'w, 's, ..>` and `Res<'w, ..>`.
#[proc_macro_derive(SystemParam)]
pub fn derive_system_param(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match system_param_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn system_param_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            input.span(),
            "`#[derive(SystemParam)]` needs a struct",
        ));
    };
    let fields: Vec<&syn::Field> = data.fields.iter().collect();
    if fields.len() > 16 {
        return Err(syn::Error::new(
            input.span(),
            "`#[derive(SystemParam)]` takes at most 16 fields; group some in a nested SystemParam",
        ));
    }
    // The item type: the struct with 'w and 's renamed to the item's.
    let mut item_args = Vec::new();
    for param in &input.generics.params {
        match param {
            syn::GenericParam::Lifetime(l) => match l.lifetime.ident.to_string().as_str() {
                "w" => item_args.push(quote!('__w)),
                "s" => item_args.push(quote!('__s)),
                _ => {
                    return Err(syn::Error::new(
                        l.span(),
                        "a SystemParam's lifetimes must be named `'w` and `'s`",
                    ));
                }
            },
            syn::GenericParam::Type(t) => {
                let ident = &t.ident;
                item_args.push(quote!(#ident));
            }
            syn::GenericParam::Const(c) => {
                let ident = &c.ident;
                item_args.push(quote!(#ident));
            }
        }
    }
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let types: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();
    let vars: Vec<syn::Ident> = (0..fields.len())
        .map(|i| syn::Ident::new(&format!("__f{i}"), proc_macro2::Span::call_site()))
        .collect();
    let build = match &data.fields {
        Fields::Named(_) => {
            let names = fields.iter().map(|f| f.ident.as_ref().expect("named"));
            quote!(#name { #(#names: #vars),* })
        }
        Fields::Unnamed(_) => quote!(#name ( #(#vars),* )),
        Fields::Unit => quote!(#name),
    };
    let tuple = quote!((#(#types,)*));
    Ok(quote! {
        // SAFETY: the fields' access, recorded by the tuple of their types;
        // each field borrows only what it recorded.
        #[allow(unsafe_code)]
        unsafe impl #impl_generics ::mosaic::SystemParam for #name #ty_generics #where_clause {
            type State = <#tuple as ::mosaic::SystemParam>::State;
            type Item<'__w, '__s> = #name<#(#item_args),*>;

            fn init_state(
                world: &mut ::mosaic::World,
                meta: &mut ::mosaic::SystemMeta,
            ) -> Self::State {
                <#tuple as ::mosaic::SystemParam>::init_state(world, meta)
            }

            unsafe fn get_param<'__w, '__s>(
                state: &'__s mut Self::State,
                meta: &::mosaic::SystemMeta,
                world: &'__w ::mosaic::World,
                ticks: ::mosaic::__macro::TickRange,
            ) -> Self::Item<'__w, '__s> {
                // SAFETY: forwarded contract.
                let (#(#vars,)*) = unsafe {
                    <#tuple as ::mosaic::SystemParam>::get_param(state, meta, world, ticks)
                };
                #build
            }

            unsafe fn try_get_param<'__w, '__s>(
                state: &'__s mut Self::State,
                meta: &::mosaic::SystemMeta,
                world: &'__w ::mosaic::World,
                ticks: ::mosaic::__macro::TickRange,
            ) -> ::core::result::Result<Self::Item<'__w, '__s>, ::mosaic::SystemSkip> {
                // SAFETY: forwarded contract.
                let (#(#vars,)*) = unsafe {
                    <#tuple as ::mosaic::SystemParam>::try_get_param(state, meta, world, ticks)
                }?;
                ::core::result::Result::Ok(#build)
            }

            fn apply(
                state: &mut Self::State,
                meta: &::mosaic::SystemMeta,
                world: &mut ::mosaic::World,
            ) {
                <#tuple as ::mosaic::SystemParam>::apply(state, meta, world);
            }

            fn queue_deferred(state: &mut Self::State, queue: &mut ::mosaic::CommandBuffer) {
                <#tuple as ::mosaic::SystemParam>::queue_deferred(state, queue);
            }
        }
    })
}

/// Implements `mosaic::QueryData` for a struct of query fields: a query
/// with named fields instead of a long tuple. Each field is a query item at
/// the struct's lifetime (`&'w T`, `&'w mut T`, `Entity`, `Option<..>`,
/// `Has<T>`, `Ref<'w, T>`, a tuple of those, or another derived struct),
/// and the query yields the struct itself. It is `ReadOnlyQueryData` (so
/// usable with `iter(&world)`) when no field writes. See the `QueryData`
/// derive in `mosaic` for examples.
#[proc_macro_derive(QueryData)]
pub fn derive_query_data(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match query::query_data_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// Implements `mosaic::QueryFilter` for a struct whose fields are filters
/// (`With<T>`, `Without<T>`, `Added<T>`, `Changed<T>`, `Or<..>`, tuples or
/// other derived filters): all must hold, as for the tuple of the field
/// types. See the `QueryFilter` derive in `mosaic` for examples.
#[proc_macro_derive(QueryFilter)]
pub fn derive_query_filter(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match query::query_filter_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// Implements `mosaic::States` (a marker trait) for a type that is also
/// `Clone + PartialEq + Eq + Hash + Debug`.
#[proc_macro_derive(States)]
pub fn derive_states(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics ::mosaic::States for #name #ty_generics #where_clause {}
    }
    .into()
}

/// Implements `mosaic::Relationship`, making the type a relation: edges
/// `source --T--> target` whose data is a `T`. Options:
/// `#[relation(one)]` (a source has at most one target, as `ChildOf`; also
/// spelled `exclusive` or `cardinality = "one"`), `#[relation(acyclic)]`
/// (`relate` refuses an edge that would close a cycle) and
/// `#[relation(on_target_despawn = "unrelate" | "despawn" | "refuse")]`
/// (what despawning a target does to its sources; `"unrelate"` is the
/// default; `on_despawn`, `"delete"`, `"cascade"` are accepted too).
#[proc_macro_derive(Relation, attributes(relation))]
pub fn derive_relation(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match relation_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn relation_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let mut one = false;
    let mut acyclic = false;
    let mut policy = quote!(::mosaic::OnTargetDespawn::Unrelate);
    for attr in &input.attrs {
        if !attr.path().is_ident("relation") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("one") || meta.path.is_ident("exclusive") {
                one = true;
                return Ok(());
            }
            if meta.path.is_ident("acyclic") {
                acyclic = true;
                return Ok(());
            }
            if meta.path.is_ident("cardinality") {
                let value: LitStr = meta.value()?.parse()?;
                one = match value.value().as_str() {
                    "one" => true,
                    "many" => false,
                    other => {
                        return Err(syn::Error::new(
                            value.span(),
                            format!("unknown cardinality `{other}`; expected \"one\" or \"many\""),
                        ))
                    }
                };
                return Ok(());
            }
            if meta.path.is_ident("on_target_despawn") || meta.path.is_ident("on_despawn") {
                let value: LitStr = meta.value()?.parse()?;
                policy = match value.value().as_str() {
                    "unrelate" | "delete" | "remove" => quote!(::mosaic::OnTargetDespawn::Unrelate),
                    "despawn" | "despawn_source" | "cascade" => {
                        quote!(::mosaic::OnTargetDespawn::Despawn)
                    }
                    "refuse" => quote!(::mosaic::OnTargetDespawn::Refuse),
                    other => {
                        return Err(syn::Error::new(
                            value.span(),
                            format!(
                                "unknown policy `{other}`; expected \"unrelate\", \"despawn\" or \"refuse\""
                            ),
                        ))
                    }
                };
                return Ok(());
            }
            Err(meta.error(
                "unknown relation option; expected `one`, `acyclic`, `cardinality` or `on_target_despawn`",
            ))
        })?;
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    // Edges are copied by `clone_entity` if the type is `Clone` (probed as
    // for components; a generic type is skipped).
    let clone_body = if input.generics.params.is_empty() {
        quote! {{
            #[allow(unused_imports)]
            use ::mosaic::__macro::{ViaClone as _, ViaSkip as _};
            (&&::mosaic::__macro::CloneProbe::<Self>(::core::marker::PhantomData)).clone_behavior()
        }}
    } else {
        quote!(::mosaic::CloneBehavior::Skip)
    };
    Ok(quote! {
        impl #impl_generics ::mosaic::Relationship for #name #ty_generics #where_clause {
            const ONE: bool = #one;
            const ON_TARGET_DESPAWN: ::mosaic::OnTargetDespawn = #policy;
            const ACYCLIC: bool = #acyclic;
            fn clone_behavior() -> ::mosaic::CloneBehavior<Self> {
                #clone_body
            }
        }
    })
}

/// Bevy's `#[derive(Resource)]`: mosaic needs none (every
/// `Send + Sync + 'static` type is a resource), so this only checks that
/// bound where the type is declared, for an early, clear error.
#[proc_macro_derive(Resource)]
pub fn derive_resource(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    marker_check(&input, quote!(::mosaic::Resource))
}

/// Bevy's `#[derive(Event)]`: mosaic needs none (every
/// `Send + Sync + 'static` type is an event), so this only checks that
/// bound where the type is declared, for an early, clear error.
#[proc_macro_derive(Event)]
pub fn derive_event(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    marker_check(&input, quote!(::mosaic::Event))
}

/// A constant that names `Type: Trait` (a blanket-implemented marker), so
/// a type that is not `Send + Sync + 'static` fails where it is declared.
/// Generic types are checked where used instead.
fn marker_check(input: &DeriveInput, trait_path: TokenStream2) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let name = &input.ident;
    quote! {
        const _: () = {
            const fn assert_marker<T: #trait_path>() {}
            assert_marker::<#name>();
        };
    }
    .into()
}

/// Bevy's `#[derive(SystemSet)]`: makes a unit struct, or an enum of unit
/// variants, a set label. Implements `mosaic::SystemSet` and
/// `From<Type> for String`, so the value goes wherever a set's name does
/// (`.in_set(Physics)`, `configure_set(GameSet::Input)`, `.after(..)`).
/// The name is the type's (`Physics`), or the type's and the variant's
/// (`GameSet::Input`).
#[proc_macro_derive(SystemSet)]
pub fn derive_system_set(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match system_set_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn system_set_impl(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "`#[derive(SystemSet)]` takes a type without generic parameters",
        ));
    }
    let body = match &input.data {
        Data::Struct(data) if matches!(data.fields, Fields::Unit) => {
            let text = name.to_string();
            quote!(#text)
        }
        Data::Enum(data) => {
            let mut arms = Vec::new();
            for variant in &data.variants {
                if !matches!(variant.fields, Fields::Unit) {
                    return Err(syn::Error::new_spanned(
                        variant,
                        "`#[derive(SystemSet)]` takes an enum of unit variants (a set is a label)",
                    ));
                }
                let v = &variant.ident;
                let text = format!("{name}::{v}");
                arms.push(quote!(#name::#v => #text,));
            }
            if arms.is_empty() {
                quote!(match *self {})
            } else {
                quote!(match self { #(#arms)* })
            }
        }
        _ => {
            return Err(syn::Error::new_spanned(
                name,
                "`#[derive(SystemSet)]` takes a unit struct or an enum of unit variants (a set is a label)",
            ));
        }
    };
    Ok(quote! {
        impl ::mosaic::SystemSet for #name {
            fn set_name(&self) -> &'static str {
                #body
            }
        }
        impl ::core::convert::From<#name> for ::std::string::String {
            fn from(set: #name) -> ::std::string::String {
                ::std::string::String::from(::mosaic::SystemSet::set_name(&set))
            }
        }
    })
}
