//! Planted secrets of every kind the built-in redactor detects, for the tests that search everything
//! the runtime writes for them. Shared by the session and proxy test crates (`#[path]`).

/// Random text of `n` characters from `alphabet`, drawn with `rng(n)` (a number below `n`).
fn random(rng: &mut dyn FnMut(u64) -> u64, alphabet: &str, n: usize) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    (0..n)
        .map(|_| chars[rng(chars.len() as u64) as usize])
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const HEX: &str = "0123456789abcdef";

/// One planted secret of each kind the built-in redactor knows: its kind, the text that carries it,
/// and the secret itself.
pub fn planted(rng: &mut dyn FnMut(u64) -> u64) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    let mut put = |kind: &'static str, secret: String, carrier: &dyn Fn(&str) -> String| {
        let text = carrier(&secret);
        out.push((kind, text, secret));
    };
    let s = format!("MIIEow{}", random(rng, ALNUM, 60));
    put("private_key", s, &|s| {
        format!("-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----")
    });
    put("gcp_private_key_id", random(rng, HEX, 40), &|s| {
        format!(r#"{{"type": "service_account", "private_key_id": "{s}"}}"#)
    });
    put(
        "anthropic_key",
        format!("sk-ant-api03-{}", random(rng, ALNUM, 80)),
        &|s| format!("ANTHROPIC_API_KEY={s}"),
    );
    put(
        "openai_key",
        format!("sk-proj-{}", random(rng, ALNUM, 48)),
        &|s| format!("export OPENAI_API_KEY={s}"),
    );
    put(
        "aws_access_key",
        format!("AKIA{}", random(rng, UPPER_DIGITS, 16)),
        &|s| format!("aws_access_key_id = {s}"),
    );
    put("aws_secret_key", random(rng, ALNUM, 40), &|s| {
        format!("aws_secret_access_key = {s}")
    });
    put(
        "google_api_key",
        format!("AIza{}", random(rng, ALNUM, 35)),
        &|s| format!("key={s}&q=1"),
    );
    put(
        "azure_storage_key",
        format!("{}==", random(rng, ALNUM, 86)),
        &|s| format!("DefaultEndpointsProtocol=https;AccountName=a;AccountKey={s};"),
    );
    put(
        "github_token",
        format!("ghp_{}", random(rng, ALNUM, 36)),
        &|s| format!("GITHUB_TOKEN={s}"),
    );
    put(
        "github_fine_grained_token",
        format!("github_pat_{}", random(rng, ALNUM, 82)),
        &|s| format!("token: {s}"),
    );
    put(
        "gitlab_token",
        format!("glpat-{}", random(rng, ALNUM, 20)),
        &|s| format!("CI_TOKEN {s}"),
    );
    put(
        "slack_token",
        format!("xoxb-{}-{}", random(rng, HEX, 12), random(rng, ALNUM, 24)),
        &|s| format!("slack {s}"),
    );
    put(
        "stripe_key",
        format!("sk_live_{}", random(rng, ALNUM, 24)),
        &|s| format!("stripe.api_key = \"{s}\""),
    );
    put("twilio_key", format!("SK{}", random(rng, HEX, 32)), &|s| {
        format!("twilio {s}")
    });
    put(
        "sendgrid_key",
        format!("SG.{}.{}", random(rng, ALNUM, 22), random(rng, ALNUM, 43)),
        &|s| format!("SENDGRID {s}"),
    );
    put(
        "npm_token",
        format!("npm_{}", random(rng, ALNUM, 36)),
        &|s| format!("//registry.npmjs.org/:_authToken={s}"),
    );
    put(
        "pypi_token",
        format!("pypi-AgEIcHlwaS5vcmc{}", random(rng, ALNUM, 60)),
        &|s| format!("password = {s}"),
    );
    put(
        "huggingface_token",
        format!("hf_{}", random(rng, ALNUM, 34)),
        &|s| format!("HF_TOKEN={s}"),
    );
    put(
        "jwt",
        format!(
            "eyJ{}.eyJ{}.{}",
            random(rng, ALNUM, 20),
            random(rng, ALNUM, 30),
            random(rng, ALNUM, 43)
        ),
        &|s| format!("cookie session={s}"),
    );
    put("bearer_token", random(rng, ALNUM, 32), &|s| {
        format!("curl -H 'Authorization: Bearer {s}' https://api.example.com")
    });
    put(
        "database_url",
        format!("pw{}", random(rng, ALNUM, 14)),
        &|s| format!("DATABASE_URL=postgres://app:{s}@db:5432/app"),
    );
    put(
        "password_assignment",
        format!("{}-{}", random(rng, ALNUM, 8), random(rng, ALNUM, 8)),
        &|s| format!("password={s}"),
    );
    out
}
