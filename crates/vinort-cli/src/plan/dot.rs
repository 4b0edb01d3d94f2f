//! `--format dot`: the plan as a Graphviz graph. One cluster per partition, nodes filled with
//! their provider's colour, refused nodes outlined in red with the reasons as the tooltip,
//! edges that cross partitions bold and labelled with the tensor's type, and a legend.

use std::fmt::Write;

use super::PlanDoc;
use super::style::{self, BOUNDARY, EDGE, IO_FILL, REFUSED};

/// A DOT string literal: `"` and `\` escaped, newlines as `\n` (Graphviz's centred line break).
fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The DOT text of `doc`.
pub fn to_dot(doc: &PlanDoc) -> String {
    let mut o = String::new();
    // `write!` to a String cannot fail.
    let _ = writeln!(o, "digraph plan {{");
    let title = format!("{}\n{}", doc.model, doc.path);
    let _ = writeln!(
        o,
        "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, labelloc=t, label={}, tooltip={}];",
        q(&style::truncate(&title, 300)),
        q(&title)
    );
    let _ = writeln!(o, "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(o, "  edge [color={}, arrowsize=0.6, fontname=\"Helvetica\", fontsize=9];", q(EDGE));

    // Legend: one swatch per provider, then the markers.
    let _ = writeln!(o, "  subgraph cluster_legend {{");
    let _ = writeln!(o, "    label=\"Legend\"; style=\"rounded\"; color=\"#bbbbbb\";");
    for (i, p) in doc.summary.providers.iter().enumerate() {
        let c = style::colours(doc, p);
        let _ = writeln!(o, "    legend_{i} [label={}, fillcolor={}, color={}];", q(p), q(c.fill), q(c.stroke));
    }
    let _ = writeln!(
        o,
        "    legend_refused [label=\"refused by an earlier provider\", fillcolor=\"#ffffff\", color={}, penwidth=3, style=\"rounded,filled,dashed\"];",
        q(REFUSED)
    );
    let _ =
        writeln!(o, "    legend_boundary_a [label=\"\", shape=point]; legend_boundary_b [label=\"\", shape=point];");
    let _ = writeln!(
        o,
        "    legend_boundary_a -> legend_boundary_b [label=\"boundary tensor\", color={}, fontcolor={}, penwidth=2.5];",
        q(BOUNDARY),
        q(BOUNDARY)
    );
    let _ = writeln!(o, "  }}");

    let refusals = doc.refusals_of();
    for p in &doc.partitions {
        let c = style::colours(doc, &p.provider);
        let _ = writeln!(o, "  subgraph cluster_p{} {{", p.index);
        let _ = writeln!(
            o,
            "    label={}; style=\"rounded,dashed\"; color={}; fontcolor={}; tooltip={};",
            q(&format!("[{}] {} — {} node(s)", p.index, p.provider, p.nodes.len())),
            q(c.stroke),
            q(c.stroke),
            q(&p.details)
        );
        for n in &p.nodes {
            let rs = refusals.get(&n.id).map(Vec::as_slice).unwrap_or(&[]);
            let tooltip = style::node_tooltip(&n.name, &n.op, p.index, &p.provider, rs);
            let label = format!("{}\n{}", n.op, style::shorten(&n.name, 40));
            let marker = if rs.is_empty() {
                format!("color={}", q(c.stroke))
            } else {
                format!("color={}, penwidth=3, style=\"rounded,filled,dashed\"", q(REFUSED))
            };
            let _ = writeln!(
                o,
                "    n{} [label={}, fillcolor={}, {marker}, tooltip={}];",
                n.id,
                q(&label),
                q(c.fill),
                q(&tooltip)
            );
        }
        let _ = writeln!(o, "  }}");
    }

    for (id, what, tensors) in [("in", "input", &doc.inputs), ("out", "output", &doc.outputs)] {
        for (i, t) in tensors.iter().enumerate() {
            let _ = writeln!(
                o,
                "  {id}_{i} [shape=ellipse, style=filled, fillcolor={}, label={}, tooltip={}];",
                q(IO_FILL),
                q(&format!("{}\n{}", style::shorten(&t.name, 40), t.ty)),
                q(&format!("graph {what} {} {}", t.name, t.ty))
            );
        }
    }
    for e in &doc.edges {
        let from = match e.from {
            Some(n) => format!("n{n}"),
            None => match doc.inputs.iter().position(|t| t.name == e.tensor.name) {
                Some(i) => format!("in_{i}"),
                None => continue,
            },
        };
        let to = match e.to {
            Some(n) => format!("n{n}"),
            None => match doc.outputs.iter().position(|t| t.name == e.tensor.name) {
                Some(i) => format!("out_{i}"),
                None => continue,
            },
        };
        let tooltip = style::edge_tooltip(e);
        let mut attrs = format!("tooltip={}", q(&tooltip));
        if e.crosses_partitions {
            let label = format!("{}\n{}", style::shorten(&e.tensor.name, 32), e.tensor.ty);
            let _ =
                write!(attrs, ", label={}, color={}, fontcolor={}, penwidth=2.5", q(&label), q(BOUNDARY), q(BOUNDARY));
        }
        if e.implicit {
            attrs.push_str(", style=dashed");
        }
        let _ = writeln!(o, "  {from} -> {to} [{attrs}];");
    }
    let _ = writeln!(o, "}}");
    o
}

#[cfg(test)]
mod tests {
    use super::q;

    #[test]
    fn dot_strings_escape_quotes_backslashes_and_newlines() {
        assert_eq!(q(r#"<script>&"x\"#), r#""<script>&\"x\\""#);
        assert_eq!(q("a\nb"), r#""a\nb""#);
    }
}
