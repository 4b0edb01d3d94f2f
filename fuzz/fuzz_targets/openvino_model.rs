//! Model bytes through load and a `[OpenVino, Cpu]` build and run: what vinort hands OpenVINO
//! must not crash it (slow: every case compiles in OpenVINO).
mod common;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let ov = vinort::OpenVino::default().into();
        common::load_build_run(data, vec![ov, vinort::Cpu::default().into()])
    });
}
