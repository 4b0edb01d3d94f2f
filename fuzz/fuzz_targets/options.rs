//! The OpenVINO options parsers: `-i` strings (`key|value ...`) and load_config JSON.
use vinort::openvino::{LoadConfig, OpenVinoOptions};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(s) = std::str::from_utf8(data) else { return };
        let _ = OpenVinoOptions::parse_cli(s);
        let _ = LoadConfig::from_json_str(s);
        let _ = LoadConfig::parse(s);
    });
}
