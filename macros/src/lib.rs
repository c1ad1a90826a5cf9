//! Macros for `nimbus`: `#[derive(Command)]`, `#[derive(Event)]`, `#[derive(Message)]` and
//! `#[handler]`. Use them through the `nimbus` crate, which re-exports them.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{parse_macro_input, DeriveInput, ItemImpl, LitStr};

/// Implements `nimbus::Message` and `nimbus::Command`: a message sent to one queue.
///
/// The type name on the wire is the Rust path (`my_crate::orders::PlaceOrder`) unless
/// `#[nimbus(type_name = "Sales.Messages.PlaceOrder")]` sets it.
#[proc_macro_derive(Command, attributes(nimbus))]
pub fn derive_command(input: TokenStream) -> TokenStream {
    derive(input, Kind::Command)
}

/// Implements `nimbus::Message` and `nimbus::Event`: a message published to every subscriber.
/// Accepts `#[nimbus(type_name = "...")]` like `Command`.
#[proc_macro_derive(Event, attributes(nimbus))]
pub fn derive_event(input: TokenStream) -> TokenStream {
    derive(input, Kind::Event)
}

/// Implements `nimbus::Message` only: a message sent with `send_to` (a reply, for instance).
/// Accepts `#[nimbus(type_name = "...")]` like `Command`.
#[proc_macro_derive(Message, attributes(nimbus))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    derive(input, Kind::Message)
}

/// Checks `impl Handler<M> for T { async fn handle(&self, message: M, ctx: &mut HandlerContext) ->
/// Result<(), HandlerError> { … } }` — or, for blocking work, `impl BlockingHandler<M> for T` with
/// a plain `fn handle` — and leaves it as it is: the traits use native (async) functions, so the
/// attribute is optional; it gives clearer errors for a wrong shape.
#[proc_macro_attribute]
pub fn handler(args: TokenStream, input: TokenStream) -> TokenStream {
    if !args.is_empty() {
        return syn::Error::new(
            Tokens::from(args)
                .into_iter()
                .next()
                .map_or_else(proc_macro2::Span::call_site, |t| t.span()),
            "#[nimbus::handler] takes no arguments",
        )
        .to_compile_error()
        .into();
    }
    let item = parse_macro_input!(input as ItemImpl);
    match check_handler(&item) {
        Ok(()) => quote! { #item }.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn check_handler(item: &ItemImpl) -> syn::Result<()> {
    let Some((_, path, _)) = &item.trait_ else {
        return Err(syn::Error::new_spanned(
            &item.self_ty,
            "#[nimbus::handler] goes on `impl Handler<MyMessage> for MyHandler` \
             (or `impl BlockingHandler<MyMessage> for MyHandler`)",
        ));
    };
    let blocking = match path.segments.last().map(|s| s.ident.to_string()).as_deref() {
        Some("Handler") => false,
        Some("BlockingHandler") => true,
        _ => {
            return Err(syn::Error::new_spanned(
                path,
                "#[nimbus::handler] goes on an impl of nimbus::Handler<MyMessage> or \
                 nimbus::BlockingHandler<MyMessage>",
            ))
        }
    };
    let handle = item.items.iter().find_map(|i| match i {
        syn::ImplItem::Fn(f) if f.sig.ident == "handle" => Some(f),
        _ => None,
    });
    match (handle, blocking) {
        (None, false) => Err(syn::Error::new_spanned(
            &item.self_ty,
            "a handler needs `async fn handle(&self, message: M, ctx: &mut HandlerContext) -> Result<(), HandlerError>`",
        )),
        (None, true) => Err(syn::Error::new_spanned(
            &item.self_ty,
            "a blocking handler needs `fn handle(&self, message: M, ctx: &mut HandlerContext) -> Result<(), HandlerError>`",
        )),
        (Some(f), false) if f.sig.asyncness.is_none() => Err(syn::Error::new_spanned(
            f.sig.fn_token,
            "`handle` must be an `async fn` (for blocking work, implement BlockingHandler with a plain `fn handle`)",
        )),
        (Some(f), true) if f.sig.asyncness.is_some() => Err(syn::Error::new_spanned(
            f.sig.asyncness,
            "a BlockingHandler's `handle` is a plain `fn`: it runs on a thread of its own (implement Handler for an `async fn`)",
        )),
        (Some(_), _) => Ok(()),
    }
}

enum Kind {
    Command,
    Event,
    Message,
}

fn derive(input: TokenStream, kind: Kind) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input, kind) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn type_name_attribute(input: &DeriveInput) -> syn::Result<Option<LitStr>> {
    let mut found = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("nimbus")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("type_name") {
                let value: LitStr = meta.value()?.parse()?;
                if value.value().trim().is_empty() {
                    return Err(meta.error("type_name must not be empty"));
                }
                found = Some(value);
                Ok(())
            } else {
                Err(meta.error("unknown nimbus attribute; expected type_name = \"...\""))
            }
        })?;
    }
    Ok(found)
}

fn expand(input: &DeriveInput, kind: Kind) -> syn::Result<Tokens> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "a nimbus message cannot be generic: its type name must be one fixed string",
        ));
    }
    let ident = &input.ident;
    let type_name = match type_name_attribute(input)? {
        Some(name) => quote!(#name),
        None => {
            let name = ident.to_string();
            quote!(::core::concat!(::core::module_path!(), "::", #name))
        }
    };
    let (kind_tokens, marker) = match kind {
        Kind::Command => (
            quote!(::nimbus::MessageKind::Command),
            quote!(impl ::nimbus::Command for #ident {}),
        ),
        Kind::Event => (
            quote!(::nimbus::MessageKind::Event),
            quote!(impl ::nimbus::Event for #ident {}),
        ),
        Kind::Message => (quote!(::nimbus::MessageKind::Message), quote!()),
    };
    Ok(quote! {
        impl ::nimbus::Message for #ident {
            const TYPE_NAME: &'static str = #type_name;
            const KIND: ::nimbus::MessageKind = #kind_tokens;
        }
        #marker
    })
}
