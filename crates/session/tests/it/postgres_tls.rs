//! The PostgreSQL store over TLS, against the test cluster of `scripts/services`: it serves TLS
//! with a certificate a throwaway CA signed (for 127.0.0.1 and localhost), and its role
//! `compact_tls` may log in over TLS only. Each `sslmode` does what libpq's does.

use crate::common::{manager_with, Agent};
use crate::services::{postgres_tls, postgres_url};
use compact_core::model::Format;
use compact_session::{PostgresStore, Store, StoreError};
use std::sync::Arc;

/// The TLS role's URL in a new schema of its own (with `?` options to append to), the CA that
/// signed the server's certificate, and one that did not.
fn tls_schema(name: &str) -> Option<(String, String, String)> {
    let (tls_url, ca, other_ca) = postgres_tls()?;
    let base = postgres_url()?;
    let schema = format!("t_tls_{name}_{}", std::process::id());
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema} AUTHORIZATION compact_tls"
        ))
        .unwrap();
    Some((
        format!("{tls_url}?options=-c%20search_path%3D{schema}"),
        ca,
        other_ca,
    ))
}

fn refused(url: &str) -> String {
    match PostgresStore::connect(url) {
        Err(StoreError::Backend(message)) => message,
        other => panic!("{url}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn postgres_verify_full_with_the_servers_ca_round_trips_a_session() {
    let Some((url, ca, _)) = tls_schema("verify_full") else {
        return;
    };
    let mut agent = Agent::new(7, Format::OpenAiChat);
    let url = format!("{url}&sslmode=verify-full&sslrootcert={ca}");
    let written = {
        let store = Arc::new(PostgresStore::connect(&url).unwrap());
        let manager = manager_with(16_000, store.clone());
        for _ in 0..6 {
            agent.step();
            manager.preflight("s", &agent.history).unwrap();
        }
        store.read("s", 0).unwrap()
    };
    assert!(!written.is_empty());
    // The certificate names localhost too.
    let by_name = url.replacen("@127.0.0.1:", "@localhost:", 1);
    let store = PostgresStore::connect(&by_name).unwrap();
    assert_eq!(store.read("s", 0).unwrap(), written, "read back over TLS");
}

#[test]
fn postgres_tls_only_role_refuses_sslmode_disable() {
    let Some((url, _, _)) = tls_schema("disable") else {
        return;
    };
    let message = refused(&format!("{url}&sslmode=disable"));
    assert!(
        message.contains("pg_hba.conf rejects connection") && message.contains("no encryption"),
        "{message}"
    );
}

#[test]
fn postgres_verify_full_refuses_a_server_another_ca_signed() {
    let Some((url, _, other_ca)) = tls_schema("wrong_ca") else {
        return;
    };
    for roots in [other_ca.as_str(), "system"] {
        for mode in ["verify-full", "verify-ca"] {
            let message = refused(&format!("{url}&sslmode={mode}&sslrootcert={roots}"));
            assert!(
                message.contains("TLS handshake")
                    && message.contains(&format!("sslmode={mode}"))
                    && message.contains("UnknownIssuer"),
                "{mode} with {roots}: {message}"
            );
        }
    }
    // Without sslrootcert the built-in roots are trusted, which did not sign it either.
    let message = refused(&format!("{url}&sslmode=verify-full"));
    assert!(message.contains("UnknownIssuer"), "{message}");
}

#[test]
fn postgres_require_and_prefer_encrypt_without_a_ca() {
    let Some((url, _, other_ca)) = tls_schema("require") else {
        return;
    };
    // `prefer` is the default: the server offers TLS, so it is used (the role needs it).
    for options in ["&sslmode=require", "&sslmode=prefer", ""] {
        let store = PostgresStore::connect(&format!("{url}{options}")).unwrap();
        assert!(store.create("s").is_ok(), "{options}");
    }
    // As in libpq, `require` with a CA file checks the chain as `verify-ca` does.
    let message = refused(&format!("{url}&sslmode=require&sslrootcert={other_ca}"));
    assert!(message.contains("UnknownIssuer"), "{message}");
    // And `prefer`, whose failed handshake is tried again without TLS: refused for the TLS-only
    // role, accepted for a role that may log in without it.
    let message = refused(&format!("{url}&sslmode=prefer&sslrootcert={other_ca}"));
    assert!(message.contains("no encryption"), "{message}");
    let plain = crate::services::postgres_schema("prefer_plain").unwrap();
    let store = PostgresStore::connect(&format!("{plain}&sslrootcert={other_ca}")).unwrap();
    assert!(store.create("s").unwrap());
}

#[test]
fn postgres_verify_ca_checks_the_chain_and_verify_full_the_name_too() {
    let Some((url, ca, _)) = tls_schema("names") else {
        return;
    };
    // Connected to 127.0.0.1 under a name the certificate does not hold (libpq's key=value form).
    let port = url
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    let schema = url.rsplit("%3D").next().unwrap();
    let keywords = format!(
        "host=db.example.invalid hostaddr=127.0.0.1 port={port} user=compact_tls \
         dbname=compact_test options='-c search_path={schema}' sslrootcert='{ca}'"
    );
    let store = PostgresStore::connect(&format!("{keywords} sslmode=verify-ca")).unwrap();
    assert!(store.create("s").unwrap());
    let message = refused(&format!("{keywords} sslmode=verify-full"));
    assert!(
        message.contains("sslmode=verify-full with `db.example.invalid`")
            && message.contains("certificate not valid for name"),
        "{message}"
    );
}
