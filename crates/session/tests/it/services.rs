//! Where the servers the store and archive tests talk to are: `scripts/services start` runs them on
//! 127.0.0.1 and exports their addresses. A test that finds an address missing skips, saying so,
//! unless `COMPACT_REQUIRE_SERVICES` is set (CI sets it, and `CI=true` counts too): then a missing
//! server is a failure, never a silent pass.
#![allow(dead_code)]

/// The value of `var`, if set. Panics when it is missing and required.
pub fn address(var: &str, what: &str) -> Option<String> {
    if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
        return Some(v);
    }
    let required = std::env::var_os("COMPACT_REQUIRE_SERVICES").is_some_and(|v| v != "0")
        || std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !required,
        "{what} is required (COMPACT_REQUIRE_SERVICES or CI is set) but {var} is not set: \
         run `eval \"$(scripts/services start)\"` first"
    );
    println!(
        "{var} not set: skipping (needs {what}; `eval \"$(scripts/services start)\"` starts it)"
    );
    None
}

/// The PostgreSQL test database's URL.
pub fn postgres_url() -> Option<String> {
    address("COMPACT_TEST_POSTGRES_URL", "a PostgreSQL server")
}

/// The test database's URL for the role that may log in over TLS only, the CA file that signed
/// the server's certificate, and a CA file that did not.
pub fn postgres_tls() -> Option<(String, String, String)> {
    Some((
        address(
            "COMPACT_TEST_POSTGRES_TLS_URL",
            "a PostgreSQL server with TLS",
        )?,
        address("COMPACT_TEST_POSTGRES_CA", "the PostgreSQL server's CA")?,
        address(
            "COMPACT_TEST_POSTGRES_OTHER_CA",
            "a CA that did not sign it",
        )?,
    ))
}

/// The S3-compatible test server's endpoint.
pub fn s3_url() -> Option<String> {
    address("COMPACT_TEST_S3_URL", "an S3-compatible server")
}

/// A URL of the test database whose connections work in a new, empty schema of their own (tests
/// run in parallel processes and must not see each other's tables).
#[cfg(feature = "postgres")]
pub fn postgres_schema(name: &str) -> Option<String> {
    let base = postgres_url()?;
    let schema = format!("t_{name}_{}", std::process::id());
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(format!("{base}{sep}options=-c%20search_path%3D{schema}"))
}
