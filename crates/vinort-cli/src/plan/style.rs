//! What the DOT, SVG and HTML drawings share: provider colours, the refused and boundary
//! markers, labels, and escaping. `docs/plan-format.md` describes these conventions.

use super::{EdgeDoc, PlanDoc, RefusalDoc};

/// A provider's colours: a light fill that keeps black text readable, and a darker stroke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Colours {
    pub fill: &'static str,
    pub stroke: &'static str,
}

/// Provider colours in the order providers first appear in the plan (blue, orange, green,
/// purple, yellow, grey), then again from the start. Red is kept for refusals.
const PALETTE: [Colours; 6] = [
    Colours { fill: "#a6cee3", stroke: "#1f78b4" },
    Colours { fill: "#fdbf6f", stroke: "#e6550d" },
    Colours { fill: "#b2df8a", stroke: "#33a02c" },
    Colours { fill: "#cab2d6", stroke: "#6a3d9a" },
    Colours { fill: "#ffff99", stroke: "#b15928" },
    Colours { fill: "#d9d9d9", stroke: "#636363" },
];

/// The outline of a node some provider refused.
pub const REFUSED: &str = "#d62728";
/// Edges that cross from one partition to another.
pub const BOUNDARY: &str = "#c51b7d";
/// Edges inside a partition, and graph inputs and outputs.
pub const EDGE: &str = "#8c8c8c";
/// Fill of graph input and output markers.
pub const IO_FILL: &str = "#ffffff";

/// The colours of `provider` in `doc`.
pub fn colours(doc: &PlanDoc, provider: &str) -> Colours {
    let i = doc.summary.providers.iter().position(|p| p == provider).unwrap_or(0);
    PALETTE[i % PALETTE.len()]
}

/// At most `max` characters of `s`, with `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// At most `max` characters of `s`, its middle replaced by `…` when cut: node and tensor names
/// share long prefixes (`encoder.layer.0.attention.…`) and differ at the end.
pub fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let tail = (max.saturating_sub(1) * 2) / 3;
    let head = max.saturating_sub(1) - tail;
    let mut t: String = s.chars().take(head).collect();
    t.push('…');
    t.extend(s.chars().skip(n - tail));
    t
}

/// The tooltip of a node: name, op, partition and provider, then every refusal.
pub fn node_tooltip(name: &str, op: &str, partition: usize, provider: &str, refusals: &[&RefusalDoc]) -> String {
    let mut s = format!("{name} ({op})\npartition [{partition}] {provider}");
    for r in refusals {
        s.push_str(&format!("\nrefused by {}: {}", r.provider, r.reason));
    }
    s
}

/// The tooltip of an edge: the value, its type, and whether it crosses partitions.
pub fn edge_tooltip(e: &EdgeDoc) -> String {
    let crossing = if e.crosses_partitions { "\ncrosses partitions" } else { "" };
    format!("{} {}{crossing}", e.tensor.name, e.tensor.ty)
}

/// Text for XML and HTML: element content and quoted attribute values alike.
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and newline are not allowed in XML 1.0.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_quotes_and_control_characters() {
        assert_eq!(xml(r#"<script>&"x'"#), "&lt;script&gt;&amp;&quot;x&#39;");
        assert_eq!(xml("a\u{1}b"), "a\u{fffd}b");
    }

    #[test]
    fn shortening_keeps_both_ends() {
        assert_eq!(shorten("encoder.layer.0.attention.self.query/MatMul", 16), "encod…ery/MatMul");
        assert_eq!(shorten("short", 16), "short");
        assert_eq!(shorten("encoder.layer.0.attention.self.query/MatMul", 16).chars().count(), 16);
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("ééé", 3), "ééé");
    }
}
