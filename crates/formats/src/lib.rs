//! Wire formats and transcript importers: explicit, tested conversions between provider JSON and the
//! conversation model of `compact-core`.
