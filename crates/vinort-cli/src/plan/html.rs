//! `--format html`: one self-contained page (inline SVG and CSS, nothing fetched): the
//! picture on the left, the legend above it, and the plan's tables on the right — partitions
//! with provider, node count, ops, boundary tensors and details; refusals with node, op,
//! provider, rule and reason; warnings. Every string from the model is escaped.

use std::fmt::Write;

use anyhow::Result;

use super::style::{self, BOUNDARY, REFUSED, xml};
use super::{PlanDoc, TensorDoc};

const CSS: &str = "\
*{box-sizing:border-box}\
body{margin:0;font:13px/1.4 'DejaVu Sans',Helvetica,Arial,sans-serif;color:#111;background:#fafafa;height:100vh;display:flex;flex-direction:column}\
header{padding:10px 16px 8px;border-bottom:1px solid #ddd;background:#fff}\
h1{font-size:18px;margin:0 0 2px}\
h2{font-size:15px;margin:14px 0 6px}\
.model{font-family:'DejaVu Sans Mono',monospace;color:#333;word-break:break-all}\
.path{margin:4px 0;color:#333}\
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 0;padding:0;list-style:none}\
.legend li{display:flex;align-items:center;gap:6px}\
.swatch{display:inline-block;width:28px;height:14px;border-radius:3px;border:1px solid}\
.swatch.refused{border:3px dashed}\
.swatch.edge{height:0;border:0;border-top:3px solid;border-radius:0}\
main{flex:1;display:flex;min-height:0}\
.graph{flex:0 1 auto;max-width:62%;min-width:25%;overflow:auto;background:#fff;border-right:1px solid #ddd;padding:8px}\
.zoom{position:sticky;top:0;left:0;z-index:1;display:flex;width:max-content;gap:4px;margin-bottom:4px}\
.graph svg{display:block}\
.zoom button{font:12px sans-serif;padding:1px 8px;border:1px solid #bbb;background:#fff;border-radius:3px;cursor:pointer}\
.plan{flex:1 1 0;overflow:auto;padding:0 14px 14px;min-width:420px}\
table{border-collapse:collapse;width:100%;background:#fff;font-size:12px}\
th,td{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}\
th{background:#f0f0f0}\
table.refusals td:first-child{min-width:9em}\
td.num{text-align:right}\
.mono{font-family:'DejaVu Sans Mono',monospace;font-size:11px;overflow-wrap:anywhere}\
.ty{color:#555;white-space:nowrap}\
.details{color:#555;font-size:11px}\
.warn{color:#8a4b00}\
nav{margin:10px 0 0;font-size:12px}\
.prov{display:inline-block;padding:0 6px;border-radius:3px;border:1px solid;white-space:nowrap}";

/// Zoom buttons for the picture, and a first view scrolled to the top-most box (a wide graph
/// can start far from the left edge). The page works without it.
const SCRIPT: &str = "(function(){\
var pane=document.querySelector('.graph'),svg=pane&&pane.querySelector('svg');if(!svg)return;\
var W=svg.width.baseVal.value,H=svg.height.baseVal.value,s=1;\
function apply(){svg.setAttribute('width',W*s);svg.setAttribute('height',H*s);}\
pane.querySelectorAll('.zoom button').forEach(function(b){b.onclick=function(){var z=b.dataset.z;\
if(z==='fit'){s=Math.min(1,(pane.clientWidth-20)/W,(pane.clientHeight-50)/H);}else if(z==='1'){s=1;}else{s*=parseFloat(z);}apply();};});\
var best=null;svg.querySelectorAll('g.node rect,g.io rect').forEach(function(r){var y=r.y.baseVal.value,x=r.x.baseVal.value;\
if(!best||y<best[1]||(y===best[1]&&x<best[0]))best=[x,y];});\
if(best){pane.scrollLeft=Math.max(0,best[0]-pane.clientWidth/3);pane.scrollTop=0;}\
})();";

/// The HTML page of `doc`.
pub fn to_html(doc: &PlanDoc) -> Result<String> {
    let svg = super::svg::render(doc, false)?;
    let mut o = String::new();
    let _ = writeln!(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">");
    let _ = writeln!(o, "<title>vinort plan: {}</title>", xml(&doc.model));
    let _ = writeln!(o, "<style>{CSS}</style>\n</head>\n<body>\n<header>");
    let what = if doc.whole_model { "whole model" } else { "split" };
    let _ = writeln!(
        o,
        "<h1>Partition plan — {what}, {} partition(s), {} node(s), {} refused, {} boundary tensor(s)</h1>",
        doc.summary.partitions, doc.summary.nodes, doc.summary.refused_nodes, doc.summary.boundary_tensors
    );
    let _ = writeln!(o, "<div class=\"model\">{}</div>", xml(&doc.model));
    let _ = writeln!(o, "<div class=\"path\">{}</div>", xml(&doc.path));
    let _ = writeln!(o, "<ul class=\"legend\">");
    for p in &doc.summary.providers {
        let c = style::colours(doc, p);
        let _ = writeln!(
            o,
            "<li><span class=\"swatch\" style=\"background:{};border-color:{}\"></span>{}</li>",
            c.fill,
            c.stroke,
            xml(p)
        );
    }
    let _ = writeln!(
        o,
        "<li><span class=\"swatch refused\" style=\"border-color:{REFUSED}\"></span>refused by an earlier provider (hover for why)</li>"
    );
    let _ = writeln!(
        o,
        "<li><span class=\"swatch edge\" style=\"border-color:{BOUNDARY}\"></span>tensor crossing partitions</li>"
    );
    let _ = writeln!(o, "<li>small number: partition index</li>\n</ul>\n</header>\n<main>");
    let _ = writeln!(
        o,
        "<section class=\"graph\">\n<div class=\"zoom\"><button data-z=\"0.8\" title=\"zoom out\">−</button><button data-z=\"1.25\" title=\"zoom in\">+</button><button data-z=\"fit\" title=\"fit the pane\">fit</button><button data-z=\"1\" title=\"actual size\">1:1</button></div>\n{svg}</section>\n<section class=\"plan\">"
    );

    let _ = writeln!(
        o,
        "<nav><a href=\"#partitions\">Partitions ({})</a> · <a href=\"#refusals\">Refused nodes ({})</a>{}</nav>",
        doc.partitions.len(),
        doc.refusals.len(),
        if doc.warnings.is_empty() {
            String::new()
        } else {
            format!(" · <a href=\"#warnings\">Warnings ({})</a>", doc.warnings.len())
        }
    );
    if !doc.warnings.is_empty() {
        let _ = writeln!(o, "<h2 id=\"warnings\">Warnings</h2>\n<ul>");
        for w in &doc.warnings {
            let _ = writeln!(o, "<li class=\"warn\">{}</li>", xml(w));
        }
        let _ = writeln!(o, "</ul>");
    }

    let _ = writeln!(o, "<h2 id=\"partitions\">Partitions</h2>\n<table class=\"partitions\">");
    let _ = writeln!(o, "<tr><th>#</th><th>provider</th><th>nodes</th><th>ops</th><th>boundary tensors</th></tr>");
    for p in &doc.partitions {
        let c = style::colours(doc, &p.provider);
        let ops: Vec<String> = p.op_counts.iter().map(|(k, v)| format!("{}×{v}", xml(k))).collect();
        let _ = writeln!(
            o,
            "<tr><td class=\"num\">{}</td><td><span class=\"prov\" style=\"background:{};border-color:{}\">{}</span></td><td class=\"num\">{}</td><td>{}</td><td class=\"mono\"><b>in</b><br>{}<br><b>out</b><br>{}</td></tr>",
            p.index,
            c.fill,
            c.stroke,
            xml(&p.provider),
            p.nodes.len(),
            ops.join(" "),
            tensors(&p.inputs),
            tensors(&p.outputs),
        );
        if p.details.chars().count() > 80 {
            // Long descriptions (OpenVINO's effective properties) open on demand.
            let first = p.details.split(';').next().unwrap_or("");
            let _ = writeln!(
                o,
                "<tr><td></td><td colspan=\"4\" class=\"details\"><details><summary>{}</summary>{}</details></td></tr>",
                xml(&style::truncate(first, 80)),
                xml(&p.details)
            );
        } else if !p.details.is_empty() {
            let _ = writeln!(o, "<tr><td></td><td colspan=\"4\" class=\"details\">{}</td></tr>", xml(&p.details));
        }
    }
    let _ = writeln!(o, "</table>");

    let _ = writeln!(o, "<h2 id=\"refusals\">Refused nodes</h2>");
    if doc.refusals.is_empty() {
        let _ = writeln!(o, "<p>None.</p>");
    } else {
        let _ = writeln!(o, "<table class=\"refusals\">");
        let _ = writeln!(o, "<tr><th>node</th><th>op</th><th>provider</th><th>rule</th><th>reason</th></tr>");
        for r in &doc.refusals {
            let _ = writeln!(
                o,
                "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                xml(&r.node),
                xml(&r.op),
                xml(&r.provider),
                xml(r.rule.as_deref().unwrap_or("")),
                xml(&r.reason)
            );
        }
        let _ = writeln!(o, "</table>");
    }
    let _ = writeln!(o, "</section>\n</main>\n<script>{SCRIPT}</script>\n</body>\n</html>");
    Ok(o)
}

/// `name float[1,3,224,224], …`, escaped.
fn tensors(ts: &[TensorDoc]) -> String {
    if ts.is_empty() {
        return "—".into();
    }
    ts.iter()
        .map(|t| format!("{} <span class=\"ty\">{}</span>", xml(&t.name), xml(&t.ty)))
        .collect::<Vec<_>>()
        .join("<br>")
}
