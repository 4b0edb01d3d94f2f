//! docs/migration.md shows two pairs of example programs side by side; they are compiled (the
//! `ort` ones with `--features anchors`) and run from `examples/`, so the guide must quote them
//! exactly, or it could drift from code that builds.

#[test]
fn the_migration_guide_quotes_every_example_verbatim() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../../docs/migration.md")).expect("docs/migration.md");
    for example in ["migrate_ort.rs", "migrate_vinort.rs", "migrate_ort_more.rs", "migrate_vinort_more.rs"] {
        let code = std::fs::read_to_string(root.join("examples").join(example)).expect("example source");
        // The guide drops the examples' leading `//!` comment and quotes the rest.
        let body: String = code.lines().skip_while(|l| l.starts_with("//!")).map(|l| format!("{l}\n")).collect();
        assert!(doc.contains(body.trim()), "docs/migration.md does not quote examples/{example} as it is now");
    }
}
