//! The top layer: the bus builder, which checks every setting, and the running bus, which starts
//! an endpoint's actors and sends on the application's behalf.

pub(crate) mod background;
pub(crate) mod builder;
pub(crate) mod bus;
#[cfg(feature = "axum")]
pub(crate) mod health_routes;
pub(crate) mod settings;
pub(crate) mod shared_commits;
pub(crate) mod transactional;
