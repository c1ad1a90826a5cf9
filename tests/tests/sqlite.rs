//! The conformance suite on the embedded SQLite backend.

nimbus_conformance::conformance_suite!(nimbus_conformance::Kind::Sqlite);
