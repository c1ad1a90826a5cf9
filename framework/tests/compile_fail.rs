//! The compile errors a user meets for common mistakes, as the user sees them: each names the
//! mistake and what to write instead. The expected messages are in `tests/ui/*.stderr`
//! (after a compiler upgrade changes their wording: `TRYBUILD=overwrite cargo test -p nimbus-bus
//! --test compile_fail`, then read the diff).

#[test]
fn mistakes_get_errors_that_say_what_to_do() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
