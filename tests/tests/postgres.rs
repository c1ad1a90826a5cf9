//! The conformance suite on PostgreSQL (`NIMBUS_POSTGRES`, default 127.0.0.1:5432). An unreachable
//! server fails these tests; they never skip.

nimbus_conformance::conformance_suite!(nimbus_conformance::Kind::Postgres);
