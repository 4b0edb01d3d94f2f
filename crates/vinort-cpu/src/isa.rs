//! Which instruction sets the Cpu provider's kernels may use: detected once, and capped by the
//! `VINORT_CPU_ISA` environment variable so one machine can run the kernels another kind of
//! CPU would run.
//!
//! Every hand-written SIMD path asks this module, never `is_x86_feature_detected!` directly,
//! so the cap reaches all of them and the `// SAFETY:` argument of each `#[target_feature]`
//! call is the same: [`Level::Avx512`] (or [`Level::Avx2`]) is reported only when the CPU has
//! every feature of that level.
//!
//! | level | features | who has it |
//! |---|---|---|
//! | `portable` | none beyond the target's baseline | any CPU |
//! | `avx2` | AVX2 + FMA | x86-64-v3: Haswell on, every AMD Zen |
//! | `avx512` | AVX-512 F, BW, VL, DQ (+ AVX2, FMA) | x86-64-v4: Skylake-SP on, AMD Zen 4 on |
//! | `avx512vnni` | `avx512` + AVX-512 VNNI (`vpdpbusd`) | Cascade Lake on, AMD Zen 4 on |
//!
//! `VINORT_CPU_ISA=avx2` makes an AVX-512 machine run the AVX2 kernels (a cap never raises
//! the level above what the CPU has). A value that names no level is ignored with a warning.
//! Matrix products of f32/f64 that go to the `gemm` crate are not capped: it picks its own
//! kernels, which differ from each other in summation order only.
//!
//! The cap is read once per process, at the first question.

use std::fmt;
use std::sync::OnceLock;

/// The environment variable that caps the level.
pub const ENV: &str = "VINORT_CPU_ISA";

/// A kernel level, from the lowest; each includes the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Scalar code and whatever the compiler vectorizes for the baseline target.
    Portable,
    /// AVX2 with FMA: 8 f32 lanes.
    Avx2,
    /// AVX-512 F/BW/VL/DQ: 16 f32 lanes, mask registers.
    Avx512,
    /// AVX-512 with VNNI: int8 dot products without an int16 step.
    Avx512Vnni,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 4] = [Level::Portable, Level::Avx2, Level::Avx512, Level::Avx512Vnni];

    /// The spelling `VINORT_CPU_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
            Level::Avx512Vnni => "avx512vnni",
        }
    }

    /// The level named `s` (case and `-`/`_` ignored: `AVX512-VNNI` is `avx512vnni`).
    pub fn parse(s: &str) -> Option<Level> {
        let s: String = s.chars().filter(|c| *c != '-' && *c != '_').collect::<String>().to_ascii_lowercase();
        Level::ALL.into_iter().find(|l| l.name() == s)
    }

    /// The highest level whose every feature this CPU has.
    pub fn detected() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2") && has!("fma");
            let avx512 = avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512dq");
            match (avx2, avx512, has!("avx512vnni")) {
                (_, true, true) => Level::Avx512Vnni,
                (_, true, false) => Level::Avx512,
                (true, false, _) => Level::Avx2,
                _ => Level::Portable,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Level::Portable
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the kernels run at: the detected level, the cap asked for, and the lower of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Isa {
    /// What the CPU has.
    pub detected: Level,
    /// What `VINORT_CPU_ISA` asked for, when it named a level.
    pub cap: Option<Level>,
}

impl Isa {
    /// The level the kernels use.
    pub fn level(self) -> Level {
        self.cap.map_or(self.detected, |c| c.min(self.detected))
    }

    /// From a detected level and the cap variable's value, if set. An unknown value is no cap.
    pub fn with_cap(detected: Level, value: Option<&str>) -> Isa {
        let cap = value.map(str::trim).filter(|v| !v.is_empty()).and_then(|v| {
            let parsed = Level::parse(v);
            if parsed.is_none() {
                tracing::warn!(
                    variable = ENV,
                    value = v,
                    "names no kernel level (portable, avx2, avx512, avx512vnni): ignored"
                );
            }
            parsed
        });
        Isa { detected, cap }
    }
}

impl fmt::Display for Isa {
    /// `avx2 (capped by VINORT_CPU_ISA; the CPU has avx512vnni)` or `avx512vnni`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cap {
            Some(_) if self.level() < self.detected => {
                write!(f, "{} (capped by {ENV}; the CPU has {})", self.level(), self.detected)
            }
            _ => write!(f, "{}", self.level()),
        }
    }
}

/// This process's levels, read once.
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| Isa::with_cap(Level::detected(), std::env::var(ENV).ok().as_deref()))
}

/// The level the kernels use.
pub fn level() -> Level {
    isa().level()
}

/// The AVX-512 (F/BW/VL/DQ) paths may run.
pub fn avx512() -> bool {
    level() >= Level::Avx512
}

/// The AVX-512 VNNI paths may run.
pub fn avx512_vnni() -> bool {
    level() >= Level::Avx512Vnni
}

/// The AVX2 + FMA paths may run.
pub fn avx2() -> bool {
    level() >= Level::Avx2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_lowers_the_level_and_never_raises_it() {
        let on_vnni = |cap| Isa::with_cap(Level::Avx512Vnni, cap).level();
        assert_eq!(on_vnni(None), Level::Avx512Vnni);
        assert_eq!(on_vnni(Some("avx2")), Level::Avx2);
        assert_eq!(on_vnni(Some("AVX512")), Level::Avx512);
        assert_eq!(on_vnni(Some("avx512-vnni")), Level::Avx512Vnni);
        assert_eq!(on_vnni(Some("portable")), Level::Portable);
        let on_avx2 = |cap| Isa::with_cap(Level::Avx2, cap).level();
        assert_eq!(on_avx2(Some("avx512vnni")), Level::Avx2, "a cap above the CPU is the CPU");
        assert_eq!(on_avx2(Some("sse9")), Level::Avx2, "an unknown value is no cap");
        assert_eq!(on_avx2(Some("")), Level::Avx2);
    }

    #[test]
    fn the_levels_say_what_they_are() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.name()), Some(l));
        }
        assert_eq!(
            Isa::with_cap(Level::Avx512Vnni, Some("avx2")).to_string(),
            "avx2 (capped by VINORT_CPU_ISA; the CPU has avx512vnni)"
        );
        assert_eq!(Isa::with_cap(Level::Avx2, None).to_string(), "avx2");
    }

    #[test]
    fn the_process_level_is_what_the_cpu_has_under_the_cap() {
        let isa = isa();
        assert_eq!(isa.detected, Level::detected());
        assert!(isa.level() <= isa.detected);
        #[cfg(target_arch = "x86_64")]
        if isa.level() >= Level::Avx512 {
            assert!(std::arch::is_x86_feature_detected!("avx512bw"));
        }
    }
}
