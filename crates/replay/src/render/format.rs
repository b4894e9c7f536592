//! Number formatting shared by the renderings.

/// Tokens in a short form: `950`, `12.3k`, `4.56M`.
pub fn human_tokens(n: u64) -> String {
    const THOUSAND: f64 = 1_000.0;
    const MILLION: f64 = 1_000_000.0;
    let x = n as f64;
    if x >= MILLION {
        format!("{:.2}M", x / MILLION)
    } else if x >= THOUSAND {
        format!("{:.1}k", x / THOUSAND)
    } else {
        n.to_string()
    }
}

/// A fraction as a percentage with one decimal, or `-` when undefined.
pub fn percent(fraction: Option<f64>) -> String {
    fraction.map_or_else(|| "-".to_owned(), |f| format!("{:.1}%", f * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms() {
        assert_eq!(human_tokens(950), "950");
        assert_eq!(human_tokens(12_345), "12.3k");
        assert_eq!(human_tokens(4_560_000), "4.56M");
        assert_eq!(percent(Some(0.5)), "50.0%");
        assert_eq!(percent(None), "-");
    }
}
