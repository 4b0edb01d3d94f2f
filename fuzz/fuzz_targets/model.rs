//! Model bytes through decode, load, validation, `[Cpu]` session build and one run.
mod common;

fn main() {
    afl::fuzz!(|data: &[u8]| common::load_build_run(data, vec![vinort::Cpu::default().into()]));
}
