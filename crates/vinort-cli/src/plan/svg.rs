//! `--format svg`: the plan drawn without Graphviz. [`super::layout`] places the boxes and
//! routes the edges; this module writes the SVG, so every node is one `<g class="node">` with a
//! `<title>` tooltip and one `<rect>`, every string from the model is escaped once, and the
//! colours are the ones DOT and HTML use.
//!
//! Text is drawn in a monospace font so its width can be known without font metrics: boxes
//! are sized from character counts.

use std::collections::HashMap;
use std::fmt::Write;

use anyhow::Result;

use super::PlanDoc;
use super::layout::{self, Size};
use super::style::{self, BOUNDARY, EDGE, IO_FILL, REFUSED, xml};

/// Monospace character widths at the font sizes used (0.6 em, DejaVu Sans Mono's advance).
const OP_FONT: f64 = 12.0;
const NAME_FONT: f64 = 11.0;
const CHAR_W: f64 = 0.6;
const LABEL_FONT: f64 = 10.0;
/// Characters of a node name shown in its box (the tooltip has all of it).
const NAME_CHARS: usize = 28;
const EDGE_LABEL_CHARS: usize = 30;
const NODE_H: f64 = 40.0;
const MARGIN: f64 = 16.0;
const FONT_FAMILY: &str = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace";

/// What one laid-out box stands for.
enum Item {
    /// A node: its id, partition and lines.
    Node { id: usize, partition: usize, op: String, name: String, tooltip: String, refused: bool, provider: String },
    /// A graph input or output.
    Io { output: bool, name: String, ty: String },
}

/// One drawn edge: every value between the same two boxes.
struct Drawn {
    values: Vec<String>,
    crossing: bool,
    implicit: bool,
}

fn text_width(chars: usize, font: f64) -> f64 {
    chars as f64 * font * CHAR_W
}

/// The standalone SVG of `doc`, legend included.
pub fn to_svg(doc: &PlanDoc) -> Result<String> {
    render(doc, true)
}

/// The SVG of `doc`; the HTML page draws its own legend and asks for none.
pub(super) fn render(doc: &PlanDoc, legend: bool) -> Result<String> {
    let refusals = doc.refusals_of();
    let mut items: Vec<Item> = vec![];
    let mut node_item: HashMap<usize, usize> = HashMap::new();
    for p in &doc.partitions {
        for n in &p.nodes {
            let rs = refusals.get(&n.id).map(Vec::as_slice).unwrap_or(&[]);
            node_item.insert(n.id, items.len());
            items.push(Item::Node {
                id: n.id,
                partition: p.index,
                op: style::truncate(&n.op, NAME_CHARS),
                name: style::shorten(&n.name, NAME_CHARS),
                tooltip: style::node_tooltip(&n.name, &n.op, p.index, &p.provider, rs),
                refused: !rs.is_empty(),
                provider: p.provider.clone(),
            });
        }
    }
    let mut input_item: HashMap<&str, usize> = HashMap::new();
    for t in &doc.inputs {
        input_item.insert(&t.name, items.len());
        items.push(Item::Io { output: false, name: style::shorten(&t.name, NAME_CHARS), ty: t.ty.clone() });
    }
    let mut output_item: HashMap<&str, usize> = HashMap::new();
    for t in &doc.outputs {
        output_item.insert(&t.name, items.len());
        items.push(Item::Io { output: true, name: style::shorten(&t.name, NAME_CHARS), ty: t.ty.clone() });
    }

    // One drawn edge per pair of boxes, in first-seen order.
    let mut pairs: Vec<((usize, usize), Drawn)> = vec![];
    let mut pair_at: HashMap<(usize, usize), usize> = HashMap::new();
    for e in &doc.edges {
        let from = match e.from {
            Some(n) => node_item.get(&n).copied(),
            None => input_item.get(e.tensor.name.as_str()).copied(),
        };
        let to = match e.to {
            Some(n) => node_item.get(&n).copied(),
            None => output_item.get(e.tensor.name.as_str()).copied(),
        };
        let (Some(from), Some(to)) = (from, to) else { continue };
        if from == to {
            continue;
        }
        let at = *pair_at.entry((from, to)).or_insert_with(|| {
            pairs.push(((from, to), Drawn { values: vec![], crossing: false, implicit: true }));
            pairs.len() - 1
        });
        let d = &mut pairs[at].1;
        d.values.push(format!("{} {}", e.tensor.name, e.tensor.ty));
        d.crossing |= e.crosses_partitions;
        d.implicit &= e.implicit;
    }

    let sizes: Vec<Size> = items.iter().map(item_size).collect();
    let labels: Vec<Option<Vec<String>>> = pairs.iter().map(|(_, d)| d.crossing.then(|| label_lines(d))).collect();
    let edges: Vec<layout::Edge> = pairs
        .iter()
        .zip(&labels)
        .map(|(((from, to), _), l)| layout::Edge { from: *from, to: *to, label: l.as_deref().map(label_size) })
        .collect();
    let placed = layout::layout(&sizes, &edges);

    let legend_h = if legend { LEGEND_ROW + 12.0 } else { 0.0 };
    let legend_w = if legend { legend_width(doc) } else { 0.0 };
    let (dx, dy) = (MARGIN, MARGIN + legend_h);
    let width = (placed.width + 2.0 * MARGIN).max(legend_w + 2.0 * MARGIN).ceil();
    let height = (placed.height + 2.0 * MARGIN + legend_h).ceil();

    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="vinort-plan" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="{}">"#,
        xml(FONT_FAMILY)
    );
    let _ = writeln!(o, "<title>{}</title>", xml(&format!("{}\n{}", doc.model, doc.path)));
    let _ = writeln!(o, "<style>{SVG_CSS}</style>");
    let _ = writeln!(
        o,
        r#"<defs><marker id="vp-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{EDGE}"/></marker><marker id="vp-arrow-boundary" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" markerHeight="5" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{BOUNDARY}"/></marker></defs>"#
    );
    if legend {
        draw_legend(&mut o, doc);
    }

    let _ = writeln!(o, r#"<g class="edges">"#);
    for (((_, d), route), label) in pairs.iter().zip(&placed.routes).zip(&placed.labels) {
        let class = match (d.crossing, d.implicit) {
            (true, _) => "edge boundary",
            (false, true) => "edge implicit",
            (false, false) => "edge",
        };
        let marker = if d.crossing { "vp-arrow-boundary" } else { "vp-arrow" };
        let mut tip = d.values.join("\n");
        if d.crossing {
            tip.push_str("\ncrosses partitions");
        }
        let path = smooth(route, dx, dy);
        let _ = write!(
            o,
            r#"<g class="{class}"><title>{}</title><path d="{path}" marker-end="url(#{marker})"/>"#,
            xml(&tip)
        );
        if let (Some(&(lx, ly)), true) = (label.as_ref(), d.crossing) {
            let lines = label_lines(d);
            let size = label_size(&lines);
            let (lx, ly) = (lx + dx, ly + dy);
            let _ = write!(
                o,
                r#"<rect class="edge-label-bg" x="{lx:.1}" y="{ly:.1}" width="{:.1}" height="{:.1}" rx="3"/><text class="edge-label">"#,
                size.w, size.h
            );
            for (i, l) in lines.iter().enumerate() {
                let y = ly + 2.0 + (i as f64 + 0.5) * LABEL_FONT * 1.2;
                let _ = write!(o, r#"<tspan x="{:.1}" y="{y:.1}">{}</tspan>"#, lx + 3.0, xml(l));
            }
            let _ = write!(o, "</text>");
        }
        let _ = writeln!(o, "</g>");
    }
    let _ = writeln!(o, "</g>");

    let _ = writeln!(o, r#"<g class="nodes">"#);
    for ((item, size), (bx, by)) in items.iter().zip(&sizes).zip(&placed.boxes) {
        let (x, y) = (bx + dx, by + dy);
        let cx = x + size.w / 2.0;
        match item {
            Item::Node { id, partition, op, name, tooltip, refused, provider } => {
                let c = style::colours(doc, provider);
                let (stroke, extra) =
                    if *refused { (REFUSED, r#" stroke-width="3" stroke-dasharray="6 3""#) } else { (c.stroke, "") };
                let _ = writeln!(
                    o,
                    r#"<g class="node{}" id="node-{id}" data-partition="{partition}"><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="6" fill="{}" stroke="{stroke}"{extra}/><text class="op" x="{cx:.1}" y="{:.1}">{}</text><text class="name" x="{cx:.1}" y="{:.1}">{}</text><text class="part" x="{:.1}" y="{:.1}" fill="{}">{partition}</text></g>"#,
                    if *refused { " refused" } else { "" },
                    xml(tooltip),
                    size.w,
                    size.h,
                    c.fill,
                    y + 14.0,
                    xml(op),
                    y + 29.0,
                    xml(name),
                    x + size.w - 4.0,
                    y + 9.0,
                    c.stroke,
                );
            }
            Item::Io { output, name, ty } => {
                let what = if *output { "graph output" } else { "graph input" };
                let _ = writeln!(
                    o,
                    r##"<g class="io"><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="{:.1}" fill="{IO_FILL}" stroke="#444444"/><text class="name" x="{cx:.1}" y="{:.1}">{}</text><text class="type" x="{cx:.1}" y="{:.1}">{}</text></g>"##,
                    xml(&format!("{what} {name} {ty}")),
                    size.w,
                    size.h,
                    size.h / 2.0,
                    y + 14.0,
                    xml(name),
                    y + 28.0,
                    xml(&style::truncate(ty, NAME_CHARS + 8)),
                );
            }
        }
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(o, "</svg>");
    Ok(o)
}

/// A route as a path: a cubic curve between consecutive points, leaving and entering each
/// vertically, so bends through the ranks stay smooth.
fn smooth(route: &[(f64, f64)], dx: f64, dy: f64) -> String {
    let mut d = String::new();
    let mut prev: Option<(f64, f64)> = None;
    for &(x, y) in route {
        let (x, y) = (x + dx, y + dy);
        match prev {
            None => {
                let _ = write!(d, "M {x:.1} {y:.1}");
            }
            Some((px, _)) if (px - x).abs() < 0.05 => {
                let _ = write!(d, " L {x:.1} {y:.1}");
            }
            Some((px, py)) => {
                let k = (y - py) / 2.0;
                let _ = write!(d, " C {px:.1} {:.1}, {x:.1} {:.1}, {x:.1} {y:.1}", py + k, y - k);
            }
        }
        prev = Some((x, y));
    }
    d
}

fn item_size(item: &Item) -> Size {
    let w = match item {
        Item::Node { op, name, .. } => {
            text_width(op.chars().count(), OP_FONT).max(text_width(name.chars().count(), NAME_FONT)) + 26.0
        }
        Item::Io { name, ty, .. } => {
            let ty = ty.chars().count().min(NAME_CHARS + 8);
            text_width(name.chars().count(), NAME_FONT).max(text_width(ty, 10.0)) + 30.0
        }
    };
    Size { w: w.max(70.0), h: NODE_H }
}

/// A boundary edge's label: its first value's name (and how many more), then its type.
fn label_lines(d: &Drawn) -> Vec<String> {
    let (name, ty) = d.values[0].split_once(' ').unwrap_or((d.values[0].as_str(), ""));
    let more = if d.values.len() > 1 { format!(" +{}", d.values.len() - 1) } else { String::new() };
    vec![format!("{}{more}", style::shorten(name, EDGE_LABEL_CHARS)), style::truncate(ty, EDGE_LABEL_CHARS)]
}

fn label_size(lines: &[String]) -> Size {
    let chars = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    Size { w: text_width(chars, LABEL_FONT) + 6.0, h: lines.len() as f64 * LABEL_FONT * 1.2 + 4.0 }
}

const SVG_CSS: &str = "\
.vinort-plan text{font-size:11px;text-anchor:middle;dominant-baseline:middle;fill:#111}\
.vinort-plan .op{font-size:12px;font-weight:bold}\
.vinort-plan .part{font-size:9px;text-anchor:end}\
.vinort-plan .type{font-size:10px;fill:#444}\
.vinort-plan .edge path{fill:none;stroke:#8c8c8c;stroke-width:1.2}\
.vinort-plan .edge.implicit path{stroke-dasharray:4 3}\
.vinort-plan .edge.boundary path{stroke:#c51b7d;stroke-width:2.5}\
.vinort-plan .edge-label{font-size:10px;fill:#c51b7d;text-anchor:start}\
.vinort-plan .edge-label-bg{fill:#fff;fill-opacity:0.9;stroke:#c51b7d;stroke-width:0.6}\
.vinort-plan .legend text{text-anchor:start;font-size:12px}\
.vinort-plan g.node:hover rect,.vinort-plan g.io:hover rect{stroke-width:3}";

const LEGEND_ROW: f64 = 24.0;

fn legend_entries(doc: &PlanDoc) -> Vec<(String, &'static str, &'static str, &'static str)> {
    let mut v: Vec<(String, &str, &str, &str)> = doc
        .summary
        .providers
        .iter()
        .map(|p| {
            let c = style::colours(doc, p);
            (p.clone(), c.fill, c.stroke, "box")
        })
        .collect();
    v.push(("refused by an earlier provider".into(), "#ffffff", REFUSED, "refused"));
    v.push(("tensor crossing partitions".into(), "", BOUNDARY, "edge"));
    v
}

fn legend_width(doc: &PlanDoc) -> f64 {
    legend_entries(doc).iter().map(|(t, ..)| 40.0 + text_width(t.chars().count(), 12.0) + 18.0).sum()
}

fn draw_legend(o: &mut String, doc: &PlanDoc) {
    let _ = write!(o, r#"<g class="legend">"#);
    let mut x = MARGIN;
    let y = MARGIN;
    for (text, fill, stroke, kind) in legend_entries(doc) {
        match kind {
            "edge" => {
                let _ = write!(
                    o,
                    r#"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{stroke}" stroke-width="2.5"/>"#,
                    y + 8.0,
                    x + 30.0,
                    y + 8.0
                );
            }
            "refused" => {
                let _ = write!(
                    o,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="30" height="16" rx="4" fill="{fill}" stroke="{stroke}" stroke-width="3" stroke-dasharray="6 3"/>"#
                );
            }
            _ => {
                let _ = write!(
                    o,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="30" height="16" rx="4" fill="{fill}" stroke="{stroke}"/>"#
                );
            }
        }
        let _ = write!(o, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, x + 38.0, y + 8.0, xml(&text));
        x += 40.0 + text_width(text.chars().count(), 12.0) + 18.0;
    }
    let _ = writeln!(o, "</g>");
}
