//! Typed messages: what a type must provide to travel on the bus.
//!
//! Derive [`Command`](crate::Command), [`Event`](crate::Event) or [`Message`](crate::Message) with
//! the macros of the same names; they fill in the type name (the Rust path by default, or
//! `#[nimbus(type_name = "...")]` for interop with .NET endpoints) and the kind.

use serde::{de::DeserializeOwned, Serialize};

/// What a message is for; it decides how it may be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageKind {
    /// Sent to one queue, handled by one endpoint.
    Command,
    /// Published to every subscribed queue.
    Event,
    /// Neither: sent with `send_to` (replies, for instance).
    Message,
}

/// A message type: serialized as a JSON body, identified on the wire by [`Message::TYPE_NAME`]
/// (the `NServiceBus.EnclosedMessageTypes` header).
pub trait Message: Serialize + DeserializeOwned + Send + 'static {
    /// The name written into `NServiceBus.EnclosedMessageTypes` and matched on receive.
    const TYPE_NAME: &'static str;
    /// Whether this is a command, an event or a plain message.
    const KIND: MessageKind;
}

/// A message sent to one queue with `send` (routed by the bus builder's `route`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a command",
    label = "not a `nimbus::Command`",
    note = "derive it: `#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]`",
    note = "events are published with `bus.publish(..)`, not sent"
)]
pub trait Command: Message {}

/// A message published to every subscriber with `publish`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an event",
    label = "not a `nimbus::Event`",
    note = "derive it: `#[derive(serde::Serialize, serde::Deserialize, nimbus::Event)]`",
    note = "commands are sent with `bus.send(..)` to one queue, not published"
)]
pub trait Event: Message {}
