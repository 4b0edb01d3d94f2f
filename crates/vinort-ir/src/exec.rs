//! The step executor shared by every level of vinort: the session runs partitions with it,
//! the Cpu provider runs kernels with it, and control-flow kernels run subgraph bodies with it.
//!
//! A [`Plan`] is built once: every value gets a slot, constants are kept aside, and each slot
//! is freed right after its last reader (a memory plan, so intermediates do not live to the
//! end of the run). Values move between slots by reference count, never by copying data.

use std::collections::HashMap;
use std::hash::Hash;

use crate::error::{Error, Result};
use crate::provider::RunContext;
use crate::value::{Value, Values};

/// One runnable step (a kernel, a compiled partition...).
pub trait Step: Send + Sync {
    /// Runs on the inputs (`None` for omitted optional inputs), returning one value per output.
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Slot(usize),
    Const(usize),
}

struct Scheduled<S> {
    step: S,
    inputs: Vec<Option<Src>>,
    outputs: Vec<Option<usize>>,
    free_after: Vec<usize>,
}

/// A compiled schedule of steps over value slots.
pub struct Plan<S> {
    steps: Vec<Scheduled<S>>,
    slots: usize,
    inputs: Vec<usize>,
    outputs: Vec<Src>,
    constants: Vec<Value>,
}

/// Builds a [`Plan`] from steps named by value keys of type `K`.
pub struct PlanBuilder<K, S> {
    srcs: HashMap<K, Src>,
    slots: usize,
    inputs: Vec<usize>,
    constants: Vec<Value>,
    steps: Vec<Scheduled<S>>,
    outputs: Vec<Src>,
}

impl<K: Hash + Eq + Copy + std::fmt::Debug, S> Default for PlanBuilder<K, S> {
    fn default() -> Self {
        PlanBuilder {
            srcs: HashMap::new(),
            slots: 0,
            inputs: vec![],
            constants: vec![],
            steps: vec![],
            outputs: vec![],
        }
    }
}

impl<K: Hash + Eq + Copy + std::fmt::Debug, S> PlanBuilder<K, S> {
    /// A new, empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    fn new_slot(&mut self, k: K) -> usize {
        let s = self.slots;
        self.slots += 1;
        self.srcs.insert(k, Src::Slot(s));
        s
    }

    /// Declares the next run-time input.
    pub fn input(&mut self, k: K) {
        let s = self.new_slot(k);
        self.inputs.push(s);
    }

    /// Declares a constant value.
    pub fn constant(&mut self, k: K, v: Value) {
        self.srcs.insert(k, Src::Const(self.constants.len()));
        self.constants.push(v);
    }

    /// True when `k` is already known (input, constant or step output).
    pub fn knows(&self, k: K) -> bool {
        self.srcs.contains_key(&k)
    }

    /// Appends a step; its inputs must already be known.
    pub fn step(&mut self, step: S, inputs: &[Option<K>], outputs: &[Option<K>]) -> Result<()> {
        let ins = inputs
            .iter()
            .map(|k| {
                k.map(|k| {
                    self.srcs
                        .get(&k)
                        .copied()
                        .ok_or_else(|| Error::invalid(format!("plan: value {k:?} is read before it is produced")))
                })
                .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        let outs = outputs.iter().map(|k| k.map(|k| self.new_slot(k))).collect();
        self.steps.push(Scheduled { step, inputs: ins, outputs: outs, free_after: vec![] });
        Ok(())
    }

    /// Declares the next output.
    pub fn output(&mut self, k: K) -> Result<()> {
        let s = self
            .srcs
            .get(&k)
            .copied()
            .ok_or_else(|| Error::invalid(format!("plan: output {k:?} is never produced")))?;
        self.outputs.push(s);
        Ok(())
    }

    /// Finishes the plan, computing where each slot dies.
    pub fn build(mut self) -> Plan<S> {
        let mut last: Vec<Option<usize>> = vec![None; self.slots];
        for (i, st) in self.steps.iter().enumerate() {
            for s in st.inputs.iter().flatten() {
                if let Src::Slot(s) = s {
                    last[*s] = Some(i);
                }
            }
        }
        let kept: Vec<bool> = (0..self.slots).map(|s| self.outputs.contains(&Src::Slot(s))).collect();
        for (s, l) in last.iter().enumerate() {
            if let Some(i) = l
                && !kept[s]
            {
                self.steps[*i].free_after.push(s);
            }
        }
        // Outputs nobody reads and that are not plan outputs die right after their step.
        for i in 0..self.steps.len() {
            let dead: Vec<usize> =
                self.steps[i].outputs.iter().flatten().copied().filter(|s| last[*s].is_none() && !kept[*s]).collect();
            self.steps[i].free_after.extend(dead);
        }
        Plan {
            steps: self.steps,
            slots: self.slots,
            inputs: self.inputs,
            outputs: self.outputs,
            constants: self.constants,
        }
    }
}

impl<S: Step> Plan<S> {
    /// Runs the plan on its inputs (in declaration order), returning its outputs.
    pub fn run(&self, inputs: &[&Value], ctx: &RunContext) -> Result<Vec<Value>> {
        self.run_with(inputs, ctx, |s, ins, ctx| s.run(ins, ctx))
    }
}

impl<S> Plan<S> {
    /// The steps, in schedule order.
    pub fn steps(&self) -> impl Iterator<Item = &S> {
        self.steps.iter().map(|s| &s.step)
    }

    /// Number of inputs.
    pub fn num_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// Runs the plan with a custom way to run each step (used to add context to errors or
    /// to run steps that are not [`Step`]s).
    pub fn run_with(
        &self,
        inputs: &[&Value],
        ctx: &RunContext,
        mut run: impl FnMut(&S, &[Option<&Value>], &RunContext) -> Result<Values>,
    ) -> Result<Vec<Value>> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::invalid(format!("plan expects {} inputs, got {}", self.inputs.len(), inputs.len())));
        }
        // Inline for small plans (a session's plan of a few partitions): no allocation.
        let mut slots: smallvec::SmallVec<[Option<Value>; 16]> = (0..self.slots).map(|_| None).collect();
        for (s, v) in self.inputs.iter().zip(inputs) {
            slots[*s] = Some((*v).clone());
        }
        for st in &self.steps {
            ctx.check()?;
            let produced = {
                // Inline up to 16 inputs (QLinearConv takes 9, fused kernels a few more).
                let mut args: smallvec::SmallVec<[Option<&Value>; 16]> = smallvec::SmallVec::new();
                for src in &st.inputs {
                    args.push(match src {
                        None => None,
                        Some(Src::Const(c)) => Some(&self.constants[*c]),
                        Some(Src::Slot(s)) => Some(
                            slots[*s]
                                .as_ref()
                                .ok_or_else(|| Error::invalid("plan: a slot was read after it was freed"))?,
                        ),
                    });
                }
                run(&st.step, &args, ctx)?
            };
            let wanted = st.outputs.len();
            if produced.len() < st.outputs.iter().rposition(Option::is_some).map_or(0, |p| p + 1) {
                return Err(Error::invalid(format!(
                    "a step returned {} outputs where {wanted} were expected",
                    produced.len()
                )));
            }
            for (slot, v) in st.outputs.iter().zip(produced) {
                if let Some(s) = slot {
                    slots[*s] = Some(v);
                }
            }
            for s in &st.free_after {
                slots[*s] = None;
            }
        }
        self.outputs
            .iter()
            .enumerate()
            .map(|(i, src)| match src {
                Src::Const(c) => Ok(self.constants[*c].clone()),
                Src::Slot(s) => {
                    // The last listing of a slot moves the value out; earlier ones share it.
                    let again = self.outputs[i + 1..].contains(src);
                    let v = if again { slots[*s].clone() } else { slots[*s].take() };
                    v.ok_or_else(|| Error::invalid("plan: an output was never produced"))
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct AddOne(&'static AtomicUsize);
    impl Step for AddOne {
        fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
            self.0.fetch_add(1, Ordering::Relaxed);
            let x = inputs[0].ok_or_else(|| Error::invalid("missing"))?.as_tensor()?.as_slice::<f32>()?.to_vec();
            Ok(smallvec::smallvec![Tensor::from_vec(&[x.len()], x.iter().map(|v| v + 1.0).collect())?.into()])
        }
    }

    #[test]
    fn chain_runs_in_order_frees_and_passes_through() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let mut b = PlanBuilder::<&str, AddOne>::new();
        b.input("x");
        b.step(AddOne(&CALLS), &[Some("x")], &[Some("a")]).unwrap();
        b.step(AddOne(&CALLS), &[Some("a")], &[Some("b")]).unwrap();
        b.output("b").unwrap();
        b.output("x").unwrap();
        assert!(b.step(AddOne(&CALLS), &[Some("nope")], &[Some("c")]).is_err());
        let plan = b.build();
        // `a` dies after the second step; `x` is kept because it is an output.
        assert_eq!(plan.steps[1].free_after, vec![1]);
        assert!(plan.steps[0].free_after.is_empty());
        let x: Value = Tensor::from_slice(&[2], &[1.0f32, 2.0]).unwrap().into();
        let out = plan.run(&[&x], &RunContext::default()).unwrap();
        assert_eq!(out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(), &[3.0, 4.0]);
        // The pass-through output is the caller's tensor itself, not a copy.
        assert_eq!(out[1].as_tensor().unwrap().data_ptr(), x.as_tensor().unwrap().data_ptr());
        assert_eq!(CALLS.load(Ordering::Relaxed), 2);
        assert!(plan.run(&[], &RunContext::default()).is_err());
    }
}
