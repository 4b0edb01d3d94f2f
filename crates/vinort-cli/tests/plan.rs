//! `vinort partition --format json|dot|svg|html`: the JSON agrees with the text plan and the
//! session's graph, the drawings carry the colours, markers and tooltips docs/plan-format.md
//! promises, the SVG is well-formed with one box per node, and model strings are escaped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `vinort partition MODEL ARGS…`, its stdout; fails the test on a non-zero exit.
fn partition(model: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vinort"))
        .current_dir(repo())
        .arg("partition")
        .arg(model)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    text
}

const CNN: &str = "models/partition_cnn/model.onnx";
/// The split case: OpenVINO refuses the flattening Softmax, the Cpu provider runs it (the cost
/// model off: the model is too small for its OpenVINO partitions to pay, and would run on Cpu).
const SPLIT: [&str; 5] = ["-e", "openvino,cpu", "--strict", "--cost-model", "off"];

fn json_plan(model: &Path, providers: &[&str]) -> Json {
    let mut args = providers.to_vec();
    args.extend(["--format", "json"]);
    serde_json::from_str(&partition(model, &args)).expect("the JSON plan parses")
}

fn nodes_of(plan: &Json) -> Vec<(u64, String, String, usize)> {
    let mut v = vec![];
    for p in plan["partitions"].as_array().unwrap() {
        for n in p["nodes"].as_array().unwrap() {
            v.push((
                n["id"].as_u64().unwrap(),
                n["name"].as_str().unwrap().to_owned(),
                n["op"].as_str().unwrap().to_owned(),
                p["index"].as_u64().unwrap() as usize,
            ));
        }
    }
    v
}

#[test]
fn json_plan_lists_every_node_once_and_agrees_with_the_text_plan() {
    let model = repo().join(CNN);
    let plan = json_plan(&model, &SPLIT);
    assert_eq!(plan["format_version"], 1);
    assert_eq!(plan["whole_model"], false);
    assert!(plan["path"].as_str().unwrap().starts_with("split: "), "{}", plan["path"]);

    // Every node of the model exactly once across the partitions, with its file name.
    let nodes = nodes_of(&plan);
    let ids: HashSet<u64> = nodes.iter().map(|n| n.0).collect();
    assert_eq!(ids.len(), nodes.len(), "a node listed twice: {nodes:?}");
    assert_eq!(nodes.len(), 8);
    assert_eq!(plan["summary"]["nodes"], 8);
    let names: HashSet<&str> = nodes.iter().map(|n| n.1.as_str()).collect();
    let want: HashSet<&str> =
        ["conv1", "relu1", "softmax_flattening", "rescale", "conv2", "relu2", "gap", "flatten"].into();
    assert_eq!(names, want);
    for p in plan["partitions"].as_array().unwrap() {
        for n in p["nodes"].as_array().unwrap() {
            assert_eq!(n["name_source"], "model", "{n}");
        }
    }

    // The text plan, line by line: same partitions, providers, ops and refusals.
    let text = partition(&model, &SPLIT);
    let parts = plan["partitions"].as_array().unwrap();
    assert!(text.contains(&format!("{} partition(s):", parts.len())), "{text}");
    for p in parts {
        let ops: Vec<String> =
            p["op_counts"].as_object().unwrap().iter().map(|(k, v)| format!("{k}x{}", v.as_u64().unwrap())).collect();
        let line = format!(
            "  [{}] {} — {} node(s): {}",
            p["index"],
            p["provider"].as_str().unwrap(),
            p["nodes"].as_array().unwrap().len(),
            ops.join(" ")
        );
        assert!(text.lines().any(|l| l == line), "no line '{line}' in:\n{text}");
        let names = |k: &str| -> Vec<String> {
            p[k].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
        };
        assert!(text.contains(&format!("      in:  {}\n", names("inputs").join(", "))), "{text}");
        assert!(text.contains(&format!("      out: {}\n", names("outputs").join(", "))), "{text}");
    }
    let refusals = plan["refusals"].as_array().unwrap();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    for r in refusals {
        let line = format!(
            "  {} ({}) by {}: {}",
            r["node"].as_str().unwrap(),
            r["op"].as_str().unwrap(),
            r["provider"].as_str().unwrap(),
            r["reason"].as_str().unwrap()
        );
        assert!(text.lines().any(|l| l == line), "no line '{line}' in:\n{text}");
        // The refused node runs in a partition of another provider.
        let id = r["node_id"].as_u64().unwrap();
        let (_, name, _, part) = nodes.iter().find(|n| n.0 == id).expect("the refused node is in a partition");
        assert_eq!(name, r["node"].as_str().unwrap());
        assert_ne!(parts[*part]["provider"], r["provider"]);
    }
    let r = &refusals[0];
    assert_eq!(
        (r["node"].as_str(), r["op"].as_str(), r["rule"].as_str()),
        (Some("softmax_flattening"), Some("Softmax"), Some("semantics"))
    );

    // Boundary tensors carry dtype and shape; OpenVINO partitions their effective properties.
    let out = &parts[0]["outputs"][0];
    assert_eq!((out["name"].as_str(), out["dtype"].as_str()), (Some("r1"), Some("float")));
    assert_eq!(out["shape"], serde_json::json!([1, 8, 16, 16]));
    assert_eq!(out["type"], "float[1,8,16,16]");
    assert_eq!(parts[0]["properties"]["INFERENCE_PRECISION_HINT"], "f32", "{}", parts[0]["properties"]);

    // Edges: between known nodes (or graph inputs/outputs), crossing exactly where the
    // partitions differ: r1 into the Softmax and sm out of it.
    let part_of: HashMap<u64, usize> = nodes.iter().map(|n| (n.0, n.3)).collect();
    let mut crossing = vec![];
    for e in plan["edges"].as_array().unwrap() {
        let (from, to) = (e["from"].as_u64(), e["to"].as_u64());
        for id in [from, to].into_iter().flatten() {
            assert!(part_of.contains_key(&id), "edge to an unknown node: {e}");
        }
        let crosses = matches!((from, to), (Some(a), Some(b)) if part_of[&a] != part_of[&b]);
        assert_eq!(e["crosses_partitions"].as_bool(), Some(crosses), "{e}");
        if crosses {
            crossing.push(e["name"].as_str().unwrap().to_owned());
        }
    }
    crossing.sort();
    assert_eq!(crossing, ["r1", "sm"]);
    assert_eq!(plan["summary"]["boundary_tensors"], 2);
}

/// Symbolic dims are strings, unknown ones null; `-o` writes the file; names the file does not
/// have (an unnamed node, a node inlined from a model-local function) say where they come from.
#[test]
fn json_shapes_keep_symbolic_dims_and_names_say_where_they_come_from() {
    use vinort::ir::proto::build::{self, dim};
    use vinort::ir::proto::onnx;
    use vinort::ir::proto::prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let dims = || [dim::named("batch"), dim::fixed(4), dim::unknown()];
    let graph = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![
            build::node("Relu", "", &["x"], &["y"]),
            onnx::NodeProto { domain: Some("local".into()), ..build::node("MyNeg", "call", &["y"], &["z"]) },
        ],
        input: vec![build::tensor_info("x", 1, dims())],
        output: vec![build::tensor_info("z", 1, dims())],
        ..Default::default()
    };
    let function = onnx::FunctionProto {
        name: Some("MyNeg".into()),
        domain: Some("local".into()),
        input: vec!["a".into()],
        output: vec!["b".into()],
        node: vec![build::node("Neg", "inner", &["a"], &["b"])],
        opset_import: vec![build::opset("", 17)],
        ..Default::default()
    };
    let proto = onnx::ModelProto { functions: vec![function], ..build::model(8, &[("", 17), ("local", 1)], graph) };
    let model = dir.path().join("dims.onnx");
    std::fs::write(&model, proto.encode_to_vec()).unwrap();
    let out = dir.path().join("plan.json");
    let printed = partition(&model, &["-e", "cpu", "--format", "json", "-o", out.to_str().unwrap()]);
    assert!(printed.contains("wrote"), "{printed}");
    let plan: Json = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(plan["inputs"][0]["shape"], serde_json::json!(["batch", 4, null]));
    assert_eq!(plan["inputs"][0]["type"], "float[batch,4,?]");
    let nodes = plan["partitions"][0]["nodes"].as_array().unwrap();
    let by_name: Vec<(&str, &str)> =
        nodes.iter().map(|n| (n["name"].as_str().unwrap(), n["name_source"].as_str().unwrap())).collect();
    // The file left the Relu unnamed (the loader names it) and the Neg comes from the call.
    assert_eq!(by_name, [("Relu_0", "generated"), ("call/MyNeg#1/inner", "function")]);
}

/// `n<id> [... fillcolor="#…" ...]` of every node line of a DOT plan.
fn dot_fills(dot: &str) -> HashMap<u64, String> {
    let mut m = HashMap::new();
    for l in dot.lines() {
        let l = l.trim_start();
        let Some(rest) = l.strip_prefix('n') else { continue };
        let Some((id, attrs)) = rest.split_once(" [") else { continue };
        let Ok(id) = id.parse::<u64>() else { continue };
        let fill = attrs.split("fillcolor=\"").nth(1).and_then(|s| s.split('"').next()).unwrap();
        m.insert(id, fill.to_owned());
    }
    m
}

#[test]
fn dot_plan_colours_providers_and_explains_refusals() {
    let model = repo().join(CNN);
    let plan = json_plan(&model, &SPLIT);
    let dot = partition(&model, &[&SPLIT[..], &["--format", "dot"]].concat());
    assert!(dot.starts_with("digraph plan {") && dot.trim_end().ends_with('}'), "{dot}");
    let fills = dot_fills(&dot);
    let nodes = nodes_of(&plan);
    assert_eq!(fills.len(), nodes.len(), "{dot}");
    // One colour per provider, every partition drawn in its provider's, each in the legend.
    let mut by_provider: BTreeMap<String, HashSet<String>> = BTreeMap::new();
    for (id, _, _, part) in &nodes {
        let provider = plan["partitions"][part]["provider"].as_str().unwrap().to_owned();
        by_provider.entry(provider).or_default().insert(fills[id].clone());
    }
    assert_eq!(by_provider.len(), 2, "{by_provider:?}");
    let colours: HashSet<&String> = by_provider.values().flatten().collect();
    assert_eq!(colours.len(), 2, "providers share a colour or a provider has two: {by_provider:?}");
    for (provider, fill) in &by_provider {
        let fill = fill.iter().next().unwrap();
        let legend = format!("[label=\"{provider}\", fillcolor=\"{fill}\"");
        assert!(dot.contains(&legend), "no legend entry {legend} in:\n{dot}");
    }
    // The refused node: outlined red, its reason in the tooltip.
    let line = dot.lines().find(|l| l.contains("label=\"Softmax\\nsoftmax_flattening\"")).expect("the Softmax node");
    assert!(line.contains("color=\"#d62728\"") && line.contains("penwidth=3"), "{line}");
    assert!(line.contains("tooltip=\"") && line.contains("refused by OpenVino(CPU): semantics: OpenVINO"), "{line}");
    // Boundary edges: bold, coloured, labelled with name, dtype and shape.
    let boundary: Vec<&str> = dot.lines().filter(|l| l.contains(" -> ") && l.contains("penwidth=2.5")).collect();
    assert_eq!(boundary.len(), 3, "two crossing edges and the legend's sample: {boundary:?}");
    assert!(boundary.iter().any(|l| l.contains("label=\"r1\\nfloat[1,8,16,16]\"")), "{boundary:?}");
    for p in plan["partitions"].as_array().unwrap() {
        assert!(dot.contains(&format!("subgraph cluster_p{} {{", p["index"])), "{dot}");
    }
}

/// Elements whose `class` attribute holds `class`.
fn with_class<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.split_whitespace().any(|c| c == class)))
        .collect()
}

fn svg_boxes(svg: &str) -> Vec<(String, [f64; 4])> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let mut boxes = vec![];
    for g in with_class(&doc, "node").into_iter().chain(with_class(&doc, "io")) {
        assert_eq!(g.tag_name().name(), "g");
        let rects: Vec<_> = g.children().filter(|c| c.tag_name().name() == "rect").collect();
        assert_eq!(rects.len(), 1, "one shape per node");
        assert!(g.children().any(|c| c.tag_name().name() == "title"), "a tooltip per node");
        let f = |a: &str| rects[0].attribute(a).unwrap().parse::<f64>().unwrap();
        boxes.push((g.attribute("id").unwrap_or("io").to_owned(), [f("x"), f("y"), f("width"), f("height")]));
    }
    boxes
}

#[test]
fn svg_plan_is_well_formed_with_one_box_per_node() {
    let model = repo().join(CNN);
    let plan = json_plan(&model, &SPLIT);
    let svg = partition(&model, &[&SPLIT[..], &["--format", "svg"]].concat());
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    let groups = with_class(&doc, "node");
    let nodes = nodes_of(&plan);
    assert_eq!(groups.len(), nodes.len());
    let ids: HashSet<String> = groups.iter().map(|g| g.attribute("id").unwrap().to_owned()).collect();
    let want: HashSet<String> = nodes.iter().map(|n| format!("node-{}", n.0)).collect();
    assert_eq!(ids, want);
    let refused = with_class(&doc, "refused");
    assert_eq!(refused.len(), 1);
    let title = refused[0].children().find(|c| c.tag_name().name() == "title").unwrap().text().unwrap();
    assert!(
        title.starts_with("softmax_flattening (Softmax)") && title.contains("refused by OpenVino(CPU): semantics:"),
        "{title}"
    );
    assert_eq!(with_class(&doc, "boundary").len(), 2);
    assert_eq!(with_class(&doc, "io").len(), 2, "the graph's input and output");
    assert!(svg.contains("#a6cee3") && svg.contains("#fdbf6f"), "both providers' colours");
}

/// The layout on bigger graphs: every node drawn once, no two boxes overlapping.
#[test]
fn svg_boxes_do_not_overlap() {
    for model in ["models/mobilenetv2_tiny/model.onnx", "models/bert_tiny/model.onnx"] {
        let model = repo().join(model);
        let nodes = json_plan(&model, &["-e", "cpu"])["summary"]["nodes"].as_u64().unwrap() as usize;
        let boxes = svg_boxes(&partition(&model, &["-e", "cpu", "--format", "svg"]));
        let drawn = boxes.iter().filter(|b| b.0.starts_with("node-")).count();
        assert_eq!(drawn, nodes, "{}", model.display());
        assert!(drawn > 10, "{drawn}");
        let model = model.display();
        for (i, (a, ra)) in boxes.iter().enumerate() {
            for (b, rb) in &boxes[i + 1..] {
                let apart = ra[0] + ra[2] <= rb[0]
                    || rb[0] + rb[2] <= ra[0]
                    || ra[1] + ra[3] <= rb[1]
                    || rb[1] + rb[3] <= ra[1];
                assert!(apart, "{model}: {a} {ra:?} overlaps {b} {rb:?}");
            }
        }
    }
}

/// A node named `<script>&"x` reading a value named `in'<b>`: every format escapes them.
#[test]
fn hostile_names_are_escaped_in_every_format() {
    use vinort::ir::proto::build;
    use vinort::ir::proto::prost::Message;
    const NODE: &str = r#"<script>&"x"#;
    const VALUE: &str = "in'<b>";
    let dir = tempfile::tempdir().unwrap();
    let graph = vinort::ir::proto::onnx::GraphProto {
        name: Some("g".into()),
        node: vec![build::node("Relu", NODE, &[VALUE], &["y"]), build::node("Neg", "neg", &["y"], &["z"])],
        input: vec![build::fixed_tensor_info(VALUE, 1, &[1, 4])],
        output: vec![build::fixed_tensor_info("z", 1, &[1, 4])],
        ..Default::default()
    };
    let model = dir.path().join("hostile.onnx");
    std::fs::write(&model, build::model(8, &[("", 17)], graph).encode_to_vec()).unwrap();

    let html = partition(&model, &["-e", "cpu", "--format", "html"]);
    assert!(!html.contains(NODE) && !html.contains(VALUE), "a raw model string in the page");
    assert!(html.contains("&lt;script&gt;&amp;&quot;x") && html.contains("in&#39;&lt;b&gt;"), "{html}");
    // The page's own script is the only one.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(html.contains("<table class=\"partitions\">") && html.contains("<svg "), "{html}");

    let svg = partition(&model, &["-e", "cpu", "--format", "svg"]);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed despite the names");
    let titles: Vec<&str> =
        doc.descendants().filter(|n| n.tag_name().name() == "title").filter_map(|n| n.text()).collect();
    assert!(titles.iter().any(|t| t.starts_with(&format!("{NODE} (Relu)"))), "{titles:?}");
    assert!(titles.iter().any(|t| t.contains(VALUE)), "{titles:?}");

    let dot = partition(&model, &["-e", "cpu", "--format", "dot"]);
    assert!(dot.contains(r#"<script>&\"x"#) && !dot.contains(NODE), "{dot}");

    let plan: Json = serde_json::from_str(&partition(&model, &["-e", "cpu", "--format", "json"])).unwrap();
    assert_eq!(plan["partitions"][0]["nodes"][0]["name"], NODE);
    assert_eq!(plan["inputs"][0]["name"], VALUE);
}
