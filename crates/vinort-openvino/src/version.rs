//! Which OpenVINO release the refusal rules were measured on, and how a loaded one compares.
//!
//! The capability table (`data/ov_cpu_rules.tsv`), the semantic rules ([`crate::semantics`])
//! and the slow-path rules ([`crate::slow`]) were measured on one OpenVINO release, the one the
//! table's `# openvino_version` header names. Another release may fix what they refuse or break
//! what they claim, so the provider compares the loaded version with it when it starts: a
//! different release is a warning naming both and the command that re-measures, a release older
//! than [`MINIMUM`] is an error.

use std::fmt;
use std::sync::OnceLock;

/// The oldest OpenVINO release vinort runs on: the C API calls it uses (properties by name,
/// host-pointer tensors, partial-shape reshape) are all there from 2024.0 on, but 2025.1
/// renumbered the C element types (`ov_element_type_e`), and openvino-sys binds the new
/// numbering, so an older library would read every tensor with the wrong type.
pub const MINIMUM: &str = "2025.1";

/// The command that re-measures the table on the installed OpenVINO.
pub const REMEASURE: &str = "python3 scripts/probe_openvino_ops.py";

/// The measured release as the rules' reasons name it (`2026.4`: major.minor of the table
/// header), so every reason follows the table when it is re-measured.
pub const MEASURED: Measured = Measured;

/// The release the rules were measured on; see [`MEASURED`].
#[derive(Debug, Clone, Copy)]
pub struct Measured;

impl Measured {
    /// The full version from the table header (`2026.4.1`).
    pub fn full(self) -> &'static str {
        crate::rules::table_version()
    }

    /// Major.minor (`2026.4`), or the header's text when it is not a version.
    pub fn release(self) -> &'static str {
        static RELEASE: OnceLock<String> = OnceLock::new();
        RELEASE.get_or_init(|| match parse(self.full()).as_deref() {
            Some([major, minor, ..]) => format!("{major}.{minor}"),
            _ => self.full().to_owned(),
        })
    }
}

impl fmt::Display for Measured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.release())
    }
}

/// The numeric components of a version: `2026.4.1-22982-e213a147257-releases/2026/4` (what
/// `ov_get_openvino_version` reports) gives `[2026, 4, 1]`. `None` when it does not start with
/// a number.
pub fn parse(version: &str) -> Option<Vec<u64>> {
    let head = version.trim().split(['-', ' ', '+']).next()?;
    let parts: Option<Vec<u64>> = head.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

/// How a loaded OpenVINO relates to the measured one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compatibility {
    /// The measured release (build suffixes aside).
    Measured,
    /// Another release, or a version that cannot be read: the rules may be off.
    Different,
    /// Older than the supported minimum.
    TooOld,
}

/// Compares a loaded version with the measured one and the minimum. Only the components the
/// measured version names count (`2026.4.1` matches `2026.4.1-22982-...`); missing
/// components count as 0 (`2024` is `2024.0`).
pub fn compare(loaded: &str, measured: &str, minimum: &str) -> Compatibility {
    let Some(found) = parse(loaded) else { return Compatibility::Different };
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    let cmp = |a: &[u64], b: &[u64]| (0..a.len().max(b.len())).map(|i| at(a, i).cmp(&at(b, i))).find(|o| o.is_ne());
    if let Some(min) = parse(minimum)
        && cmp(&found, &min) == Some(std::cmp::Ordering::Less)
    {
        return Compatibility::TooOld;
    }
    match parse(measured) {
        Some(m) if (0..m.len()).all(|i| at(&found, i) == m[i]) => Compatibility::Measured,
        _ => Compatibility::Different,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_parse_takes_the_numeric_head() {
        assert_eq!(parse("2026.4.1-22982-e213a147257-releases/2026/4"), Some(vec![2026, 4, 1]));
        assert_eq!(parse("2024.0"), Some(vec![2024, 0]));
        assert_eq!(parse(" 2025.1.0 "), Some(vec![2025, 1, 0]));
        assert_eq!(parse("custom_master"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn version_compare_same_different_too_old() {
        use Compatibility::*;
        let c = |loaded| compare(loaded, "2026.4.1", "2024.0");
        assert_eq!(c("2026.4.1-22982-e213a147257-releases/2026/4"), Measured);
        assert_eq!(c("2026.4.1"), Measured);
        assert_eq!(c("2026.4.2-1"), Different);
        assert_eq!(c("2026.4"), Different, "2026.4 is 2026.4.0, not the measured 2026.4.1");
        assert_eq!(c("2027.0.0"), Different, "newer is different, not an error");
        assert_eq!(c("2025.3.0"), Different);
        assert_eq!(c("2024.0.0-1"), Different, "the minimum itself is supported");
        assert_eq!(c("2024"), Different);
        assert_eq!(c("2023.3.0"), TooOld);
        assert_eq!(c("2022.1"), TooOld);
        assert_eq!(c("master-build"), Different, "an unreadable version warns instead of failing");
        assert_eq!(compare("2026.4.7", "2026.4", "2024.0"), Measured, "only the measured components count");
    }

    #[test]
    fn version_measured_comes_from_the_table_header() {
        assert_eq!(MEASURED.full(), crate::rules::table_version());
        assert!(MEASURED.full().starts_with(MEASURED.release()), "{} {}", MEASURED.full(), MEASURED.release());
        assert_eq!(MEASURED.to_string().matches('.').count(), 1, "{MEASURED}");
        assert_ne!(compare(MEASURED.full(), MINIMUM, "0"), Compatibility::TooOld);
    }
}
