//! What OpenVINO's CPU plugin will do on this CPU: the instruction sets it may use, read from
//! the CPU and from oneDNN's ISA cap, and the two behaviours vinort adapts to.
//!
//! OpenVINO's CPU plugin runs on oneDNN, which honours `ONEDNN_MAX_CPU_ISA` (older name
//! `DNNL_MAX_CPU_ISA`; oneDNN's "CPU dispatcher control"): `ONEDNN_MAX_CPU_ISA=AVX2` makes an
//! AVX-512 machine run the AVX2 kernels. With vinort's own `VINORT_CPU_ISA` (`vinort_cpu::isa`)
//! one machine can then run what an AVX2-only CPU runs. Two behaviours follow the level:
//!
//! - **Exact int8 products** need VNNI. Without it, uint8 × int8 products go through
//!   `vpmaddubsw`, which saturates in int16 (measured on OpenVINO 2026.4.1 with the QDQ
//!   MobileNetV2 at f32 precision: 2 output steps from the unfused reference with AVX-512 VNNI,
//!   9 steps under `ONEDNN_MAX_CPU_ISA=AVX512_CORE` or `AVX2`, as on an AVX2-only EPYC). vinort
//!   then folds int8 weights to f32 before OpenVINO sees them (`export`).
//! - **bf16 by default**: the plugin's default inference precision is bf16 on a CPU with
//!   AVX-512 BF16 (or AMX). In the 2026.4.1 release the plugin decides that from the CPU alone,
//!   not from the cap, so a compile at the default precision under a cap below
//!   `AVX512_CORE_BF16` fails with "object is not initialized" (measured). vinort asks for f32
//!   there, which is the default such a CPU would get.
//!
//! Read once per process; the cap must be in the environment before OpenVINO loads.

use std::sync::OnceLock;

/// The environment variables oneDNN reads, in the order it prefers them.
pub const CAP_VARIABLES: [&str; 2] = ["ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"];

/// The x86 features OpenVINO's choices depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Features {
    /// AVX-512 F, BW, VL and DQ (oneDNN's `avx512_core`).
    pub avx512_core: bool,
    /// AVX-512 VNNI (`vpdpbusd` on zmm/ymm, EVEX).
    pub avx512_vnni: bool,
    /// AVX-VNNI (the VEX form, on AVX2-class cores).
    pub avx_vnni: bool,
    /// AVX-512 BF16.
    pub avx512_bf16: bool,
}

impl Features {
    /// This CPU's.
    pub fn detected() -> Features {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            Features {
                avx512_core: has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512dq"),
                avx512_vnni: has!("avx512vnni"),
                avx_vnni: has!("avxvnni"),
                avx512_bf16: has!("avx512bf16"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Features::default()
        }
    }
}

/// What a oneDNN ISA cap lets through of [`Features`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Allows {
    avx512: bool,
    evex_vnni: bool,
    vex_vnni: bool,
    bf16: bool,
}

/// oneDNN's cap names (`dnnl_cpu_isa_t` without the prefix, upper case). The levels are only
/// partly ordered: `AVX2_VNNI` is not below `AVX512_CORE` (oneDNN's `is_subset`), so each
/// name says what it allows.
fn allows(cap: &str) -> Option<Allows> {
    let a = |avx512, evex_vnni, vex_vnni, bf16| Some(Allows { avx512, evex_vnni, vex_vnni, bf16 });
    match cap {
        "SSE41" | "AVX" | "AVX2" => a(false, false, false, false),
        "AVX2_VNNI" | "AVX2_VNNI_2" => a(false, false, true, false),
        "AVX512_CORE" => a(true, false, false, false),
        "AVX512_CORE_VNNI" => a(true, true, false, false),
        "AVX512_CORE_BF16" | "AVX512_CORE_FP16" | "AVX10_1_512" => a(true, true, false, true),
        "AVX512_CORE_AMX"
        | "AVX512_CORE_AMX_FP16"
        | "AVX10_1_512_AMX"
        | "AVX10_1_512_AMX_FP16"
        | "AVX10_2_512"
        | "AVX10_2_512_AMX_2"
        | "ALL"
        | "DEFAULT" => a(true, true, true, true),
        _ => None,
    }
}

/// OpenVINO's CPU plugin on this machine: the CPU's features and oneDNN's cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuKind {
    /// What the CPU has.
    pub features: Features,
    /// `(variable, value)` of the cap in force, when one is set and known to oneDNN.
    pub cap: Option<(String, String)>,
}

impl CpuKind {
    /// From features and the environment lookup `var` (tests pass their own).
    pub fn with_env(features: Features, var: impl Fn(&str) -> Option<String>) -> CpuKind {
        let cap = CAP_VARIABLES.iter().find_map(|name| {
            let value = var(name)?.trim().to_ascii_uppercase();
            if value.is_empty() {
                return None;
            }
            if allows(&value).is_none() {
                tracing::warn!(variable = name, value = %value, "not an ISA name oneDNN knows: no cap assumed");
                return None;
            }
            Some((name.to_string(), value))
        });
        CpuKind { features, cap }
    }

    fn allows(&self) -> Allows {
        self.cap.as_ref().and_then(|(_, v)| allows(v)).unwrap_or(Allows {
            avx512: true,
            evex_vnni: true,
            vex_vnni: true,
            bf16: true,
        })
    }

    /// Whether the plugin's kernels may use AVX-512 here (f32 sums then run 16 lanes wide, in
    /// another order than with AVX2).
    pub fn avx512(&self) -> bool {
        self.features.avx512_core && self.allows().avx512
    }

    /// Whether OpenVINO multiplies uint8 × int8 exactly here: some VNNI form is on the CPU and
    /// under the cap. Always true off x86-64, where the `vpmaddubsw` problem does not arise.
    pub fn exact_int8(&self) -> bool {
        if !cfg!(target_arch = "x86_64") {
            return true;
        }
        let a = self.allows();
        (self.features.avx512_vnni && a.evex_vnni) || (self.features.avx_vnni && a.vex_vnni)
    }

    /// Whether OpenVINO's default CPU precision would be bf16 here (AVX-512 BF16, under the cap).
    pub fn bf16_default(&self) -> bool {
        self.features.avx512_bf16 && self.allows().bf16
    }

    /// The cap keeps the plugin's kernels below bf16 while its own check (the CPU alone) still
    /// picks bf16 as the default precision: a default-precision compile would fail.
    pub fn cap_hides_bf16(&self) -> bool {
        self.features.avx512_bf16 && !self.allows().bf16
    }

    /// One line for `vinort --version` and the docs: the cap, int8 and the default precision.
    pub fn describe(&self) -> String {
        let cap = match &self.cap {
            Some((k, v)) => format!("capped by {k}={v}"),
            None => "no ISA cap".into(),
        };
        let int8 =
            if self.exact_int8() { "exact (VNNI)" } else { "saturating without VNNI: vinort folds int8 weights" };
        let precision = if self.bf16_default() { "bf16" } else { "f32" };
        format!("{cap}; int8 products {int8}; default precision {precision}")
    }
}

/// This process's.
pub fn current() -> &'static CpuKind {
    static KIND: OnceLock<CpuKind> = OnceLock::new();
    KIND.get_or_init(|| CpuKind::with_env(Features::detected(), |k| std::env::var(k).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZEN4: Features = Features { avx512_core: true, avx512_vnni: true, avx_vnni: false, avx512_bf16: true };
    const ZEN3: Features = Features { avx512_core: false, avx512_vnni: false, avx_vnni: false, avx512_bf16: false };

    fn kind(f: Features, vars: &[(&str, &str)]) -> CpuKind {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        CpuKind::with_env(f, |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn the_cap_decides_int8_and_bf16() {
        let full = kind(ZEN4, &[]);
        assert!(full.exact_int8() && full.bf16_default() && !full.cap_hides_bf16() && full.avx512());
        for cap in ["AVX2", "avx512_core", "SSE41"] {
            let k = kind(ZEN4, &[("ONEDNN_MAX_CPU_ISA", cap)]);
            assert!(!k.exact_int8() && !k.bf16_default() && k.cap_hides_bf16(), "{cap}");
            assert_eq!(k.avx512(), cap == "avx512_core", "{cap}");
        }
        let vnni = kind(ZEN4, &[("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_VNNI")]);
        assert!(vnni.exact_int8() && !vnni.bf16_default());
        let bf16 = kind(ZEN4, &[("DNNL_MAX_CPU_ISA", "AVX512_CORE_BF16")]);
        assert!(bf16.exact_int8() && bf16.bf16_default(), "the older variable name is read too");
        let old = kind(ZEN3, &[]);
        assert!(!old.exact_int8() && !old.bf16_default() && !old.cap_hides_bf16() && !old.avx512());
    }

    #[test]
    fn the_newer_variable_wins_and_unknown_values_are_no_cap() {
        let both = kind(ZEN4, &[("ONEDNN_MAX_CPU_ISA", "AVX2"), ("DNNL_MAX_CPU_ISA", "ALL")]);
        assert_eq!(both.cap, Some(("ONEDNN_MAX_CPU_ISA".into(), "AVX2".into())));
        let typo = kind(ZEN4, &[("ONEDNN_MAX_CPU_ISA", "AVX3")]);
        assert_eq!(typo.cap, None);
        assert!(typo.exact_int8());
        // AVX-VNNI is not below AVX512_CORE_VNNI in oneDNN's partial order.
        let alder = Features { avx512_core: false, avx512_vnni: false, avx_vnni: true, avx512_bf16: false };
        assert!(kind(alder, &[]).exact_int8());
        assert!(kind(alder, &[("ONEDNN_MAX_CPU_ISA", "AVX2_VNNI")]).exact_int8());
        assert!(!kind(alder, &[("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_VNNI")]).exact_int8());
    }

    #[test]
    fn describe_names_the_cap() {
        let d = kind(ZEN4, &[("ONEDNN_MAX_CPU_ISA", "AVX2")]).describe();
        assert!(d.starts_with("capped by ONEDNN_MAX_CPU_ISA=AVX2"), "{d}");
        assert!(d.contains("folds int8 weights") && d.ends_with("default precision f32"), "{d}");
    }
}
