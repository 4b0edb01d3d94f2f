//! A layered (Sugiyama-style) layout for the plan's drawings, top to bottom: ranks by longest
//! path with nodes sunk toward their consumers, one dummy per rank on long edges, crossing
//! reduction by barycentre sweeps, and x positions by weighted isotonic regression (each rank
//! in turn pulled toward its neighbours' positions, keeping its order and spacing).
//!
//! Why not the `layout-rs` crate (0.1.3), which was tried first: its DAG re-checks acyclicity
//! after every edge it adds (a cubic cost; the 259-node split plan of `bert_mini_int8` had not
//! finished after 7 minutes), and with that check switched off its placement drifts sideways
//! rank after rank: that plan came out 7,706 px wide and 14,624 px tall, mostly empty. It also
//! reports broken invariants by panicking. This layout takes ~0.1 s there and every step is
//! bounded.
//!
//! Every edge runs between adjacent ranks once dummies are in; a labelled edge spans at least
//! two ranks so one dummy carries its label, the line passing along the label's left side.

/// A box to place: its size.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub w: f64,
    pub h: f64,
}

/// An edge between two boxes, with the size of its label if it has one.
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub label: Option<Size>,
}

/// Where everything went: each box's top-left corner, each edge's route (from the source's
/// bottom to the target's top) and the top-left corner of its label, and the extent.
#[derive(Debug, Clone)]
pub struct Placed {
    pub boxes: Vec<(f64, f64)>,
    pub routes: Vec<Vec<(f64, f64)>>,
    pub labels: Vec<Option<(f64, f64)>>,
    pub width: f64,
    pub height: f64,
}

/// Horizontal space between two boxes, between a box and a dummy, and between dummies.
const GAP_BOX: f64 = 28.0;
const GAP_DUMMY: f64 = 12.0;
/// Vertical space between ranks.
const RANK_GAP: f64 = 34.0;
/// The label's distance from its edge's line.
const LABEL_PAD: f64 = 5.0;
const SWEEPS: usize = 24;
const X_PASSES: usize = 10;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Real(usize),
    /// A point of edge `0` on a rank it crosses; `true` when it carries the label.
    Dummy(usize, bool),
}

#[derive(Debug, Clone)]
struct VNode {
    kind: Kind,
    rank: usize,
    /// Extent left and right of the anchor (the line's x for dummies, the centre for boxes).
    left: f64,
    right: f64,
    h: f64,
    up: Vec<usize>,
    down: Vec<usize>,
}

/// Lays out `sizes` boxes joined by `edges` (a DAG; an edge against the flow of a cycle is drawn
/// reversed).
pub fn layout(sizes: &[Size], edges: &[Edge]) -> Placed {
    let n = sizes.len();
    let order = topo_order(n, edges);
    let mut pos = vec![0usize; n];
    for (i, v) in order.iter().enumerate() {
        pos[*v] = i;
    }
    // Each edge as (upper, lower) in the flow, its minimum length and whether it was reversed.
    let flow: Vec<(usize, usize, usize, bool)> = edges
        .iter()
        .map(|e| {
            let len = if e.label.is_some() { 2 } else { 1 };
            if pos[e.from] <= pos[e.to] { (e.from, e.to, len, false) } else { (e.to, e.from, len, true) }
        })
        .collect();

    // Ranks: longest path from the sources, then nodes sunk toward their consumers where that
    // shortens more edges than it lengthens.
    let mut rank = vec![0usize; n];
    let mut outs: Vec<Vec<usize>> = vec![vec![]; n];
    let mut ins: Vec<Vec<usize>> = vec![vec![]; n];
    for (k, (a, b, _, _)) in flow.iter().enumerate() {
        if a != b {
            outs[*a].push(k);
            ins[*b].push(k);
        }
    }
    for &v in &order {
        for &k in &outs[v] {
            let (_, b, len, _) = flow[k];
            rank[b] = rank[b].max(rank[v] + len);
        }
    }
    for &v in order.iter().rev() {
        if outs[v].is_empty() || ins[v].len() > outs[v].len() {
            continue;
        }
        let lowest = outs[v].iter().map(|&k| rank[flow[k].1] - flow[k].2).min().unwrap_or(rank[v]);
        rank[v] = rank[v].max(lowest);
    }
    let ranks = rank.iter().max().map_or(0, |m| m + 1);

    // Virtual nodes: the boxes, then the dummies of each long edge.
    let mut vs: Vec<VNode> = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| VNode {
            kind: Kind::Real(i),
            rank: rank[i],
            left: s.w / 2.0,
            right: s.w / 2.0,
            h: s.h,
            up: vec![],
            down: vec![],
        })
        .collect();
    let mut chains: Vec<Vec<usize>> = Vec::with_capacity(edges.len());
    for (k, (a, b, _, _)) in flow.iter().enumerate() {
        let mut chain = vec![*a];
        let (ra, rb) = (rank[*a], rank[*b]);
        let label_rank = (ra + rb) / 2;
        for r in ra + 1..rb {
            let labelled = r == label_rank && edges[k].label.is_some();
            let (right, h) = match (labelled, edges[k].label) {
                (true, Some(l)) => (LABEL_PAD + l.w, l.h),
                _ => (2.0, 0.0),
            };
            vs.push(VNode { kind: Kind::Dummy(k, labelled), rank: r, left: 2.0, right, h, up: vec![], down: vec![] });
            chain.push(vs.len() - 1);
        }
        chain.push(*b);
        for w in chain.windows(2) {
            if w[0] != w[1] {
                vs[w[0]].down.push(w[1]);
                vs[w[1]].up.push(w[0]);
            }
        }
        chains.push(chain);
    }

    // Order within ranks: start from the boxes' topological order, then barycentre sweeps,
    // keeping the order with the fewest crossings.
    let mut layers: Vec<Vec<usize>> = vec![vec![]; ranks];
    let mut by_order: Vec<usize> = (0..vs.len()).collect();
    by_order.sort_by_key(|v| match vs[*v].kind {
        Kind::Real(i) => (pos[i], 0),
        Kind::Dummy(k, _) => (pos[flow[k].0], 1 + k),
    });
    for v in by_order {
        layers[vs[v].rank].push(v);
    }
    let mut best = layers.clone();
    let mut best_crossings = crossings(&vs, &layers);
    for sweep in 0..SWEEPS {
        if best_crossings == 0 {
            break;
        }
        let down = sweep % 2 == 0;
        let rs: Vec<usize> = if down { (1..ranks).collect() } else { (0..ranks.saturating_sub(1)).rev().collect() };
        for r in rs {
            let adjacent = if down { r - 1 } else { r + 1 };
            let at = positions(&layers[adjacent]);
            let layer = &mut layers[r];
            let keys: Vec<(usize, f64)> = layer
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let nbrs = if down { &vs[*v].up } else { &vs[*v].down };
                    let ps: Vec<f64> = nbrs.iter().filter_map(|u| at.get(u).map(|p| *p as f64)).collect();
                    let key = if ps.is_empty() { i as f64 } else { ps.iter().sum::<f64>() / ps.len() as f64 };
                    (*v, key)
                })
                .collect();
            let mut keyed = keys;
            keyed.sort_by(|a, b| a.1.total_cmp(&b.1));
            *layer = keyed.into_iter().map(|(v, _)| v).collect();
        }
        let c = crossings(&vs, &layers);
        if c < best_crossings {
            best_crossings = c;
            best = layers.clone();
        }
    }
    let layers = best;

    // x: packed left to right, then each rank pulled toward its neighbours, alternately above
    // and below, keeping order and gaps.
    let mut x = vec![0.0f64; vs.len()];
    for layer in &layers {
        let mut at = 0.0;
        for (i, v) in layer.iter().enumerate() {
            if i > 0 {
                at += gap(&vs[layer[i - 1]], &vs[*v]);
            } else {
                at = vs[*v].left;
            }
            x[*v] = at;
        }
    }
    for pass in 0..X_PASSES {
        let down = pass % 2 == 0;
        let rs: Vec<usize> = if down { (1..ranks).collect() } else { (0..ranks.saturating_sub(1)).rev().collect() };
        for r in rs {
            let layer = &layers[r];
            let mut want = Vec::with_capacity(layer.len());
            let mut weight = Vec::with_capacity(layer.len());
            for v in layer {
                let nbrs = if down { &vs[*v].up } else { &vs[*v].down };
                if nbrs.is_empty() {
                    want.push(x[*v]);
                    weight.push(0.05);
                } else {
                    want.push(nbrs.iter().map(|u| x[*u]).sum::<f64>() / nbrs.len() as f64);
                    // Dummies weigh more: long edges stay straight.
                    weight.push(if matches!(vs[*v].kind, Kind::Dummy(..)) { 4.0 } else { 1.0 });
                }
            }
            let gaps: Vec<f64> = layer.windows(2).map(|w| gap(&vs[w[0]], &vs[w[1]])).collect();
            for (v, nx) in layer.iter().zip(isotonic(&want, &weight, &gaps)) {
                x[*v] = nx;
            }
        }
    }
    let min_x = vs.iter().enumerate().map(|(i, v)| x[i] - v.left).fold(f64::INFINITY, f64::min);
    let shift = if min_x.is_finite() { -min_x } else { 0.0 };
    for xi in &mut x {
        *xi += shift;
    }

    // y: each rank as tall as its tallest member, members centred in it.
    let mut rank_top = vec![0.0f64; ranks];
    let mut rank_h = vec![0.0f64; ranks];
    for v in &vs {
        rank_h[v.rank] = rank_h[v.rank].max(v.h);
    }
    let mut y = 0.0;
    for r in 0..ranks {
        rank_top[r] = y;
        y += rank_h[r] + RANK_GAP;
    }
    let height = (y - RANK_GAP).max(0.0);
    let top = |v: &VNode| rank_top[v.rank] + (rank_h[v.rank] - v.h) / 2.0;

    let boxes: Vec<(f64, f64)> = (0..n).map(|i| (x[i] - vs[i].left, top(&vs[i]))).collect();
    let width = vs.iter().enumerate().map(|(i, v)| x[i] + v.right).fold(0.0, f64::max);

    // Ports: a box's incoming edges spread over its top, outgoing over its bottom, in the order
    // of where they come from or go.
    let mut out_port: Vec<f64> = vec![0.0; edges.len()];
    let mut in_port: Vec<f64> = vec![0.0; edges.len()];
    for i in 0..n {
        let (bx, w) = (boxes[i].0, sizes[i].w);
        let spread = |ks: &[usize], next: &dyn Fn(usize) -> f64, ports: &mut Vec<f64>| {
            let mut ks: Vec<usize> = ks.to_vec();
            ks.sort_by(|a, b| next(*a).total_cmp(&next(*b)));
            let m = ks.len() as f64;
            for (j, k) in ks.iter().enumerate() {
                ports[*k] = bx + w * (j as f64 + 1.0) / (m + 1.0);
            }
        };
        let below = |k: usize| x[chains[k][1]];
        let above = |k: usize| x[chains[k][chains[k].len() - 2]];
        spread(&outs[i], &below, &mut out_port);
        spread(&ins[i], &above, &mut in_port);
    }

    let mut routes = Vec::with_capacity(edges.len());
    let mut labels = Vec::with_capacity(edges.len());
    for (k, chain) in chains.iter().enumerate() {
        let (a, b) = (chain[0], chain[chain.len() - 1]);
        let mut pts = vec![(out_port[k], boxes[a].1 + sizes[a].h)];
        let mut label = None;
        for &d in &chain[1..chain.len() - 1] {
            let t = top(&vs[d]);
            if let Kind::Dummy(_, true) = vs[d].kind {
                label = Some((x[d] + LABEL_PAD, t));
            }
            pts.push((x[d], t));
            if vs[d].h > 0.0 {
                pts.push((x[d], t + vs[d].h));
            }
        }
        pts.push((in_port[k], boxes[b].1));
        if a == b {
            pts.truncate(1);
        }
        if flow[k].3 {
            pts.reverse();
        }
        routes.push(pts);
        labels.push(label);
    }
    Placed { boxes, routes, labels, width, height }
}

/// Kahn's order of the boxes; boxes on a cycle (none in a valid ONNX graph) follow in index
/// order.
fn topo_order(n: usize, edges: &[Edge]) -> Vec<usize> {
    let mut indeg = vec![0usize; n];
    let mut outs: Vec<Vec<usize>> = vec![vec![]; n];
    for e in edges {
        if e.from != e.to {
            indeg[e.to] += 1;
            outs[e.from].push(e.to);
        }
    }
    let mut ready: std::collections::VecDeque<usize> = (0..n).filter(|v| indeg[*v] == 0).collect();
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    while let Some(v) = ready.pop_front() {
        order.push(v);
        done[v] = true;
        for &w in &outs[v] {
            indeg[w] -= 1;
            if indeg[w] == 0 {
                ready.push_back(w);
            }
        }
    }
    order.extend((0..n).filter(|v| !done[*v]));
    order
}

fn positions(layer: &[usize]) -> std::collections::HashMap<usize, usize> {
    layer.iter().enumerate().map(|(i, v)| (*v, i)).collect()
}

fn gap(a: &VNode, b: &VNode) -> f64 {
    let space = match (a.kind, b.kind) {
        (Kind::Real(_), Kind::Real(_)) => GAP_BOX,
        _ => GAP_DUMMY,
    };
    a.right + space + b.left
}

/// Edge crossings between adjacent ranks: inversions of the lower ends when the segments are
/// sorted by their upper ends.
fn crossings(vs: &[VNode], layers: &[Vec<usize>]) -> usize {
    let mut total = 0;
    for r in 0..layers.len().saturating_sub(1) {
        let upper = positions(&layers[r]);
        let lower = positions(&layers[r + 1]);
        let mut segs: Vec<(usize, usize)> = vec![];
        for v in &layers[r] {
            for d in &vs[*v].down {
                if let Some(l) = lower.get(d) {
                    segs.push((upper[v], *l));
                }
            }
        }
        segs.sort_unstable();
        // Fenwick tree over the lower positions: for each segment, how many earlier ones end
        // to its right.
        let m = layers[r + 1].len() + 1;
        let mut tree = vec![0usize; m + 1];
        for (seen, (_, l)) in segs.iter().enumerate() {
            let mut i = l + 1;
            let mut not_right = 0;
            while i > 0 {
                not_right += tree[i];
                i -= i & i.wrapping_neg();
            }
            total += seen - not_right;
            let mut i = l + 1;
            while i <= m {
                tree[i] += 1;
                i += i & i.wrapping_neg();
            }
        }
    }
    total
}

/// Positions closest to `want` (weighted least squares) with `x[i+1] - x[i] >= gaps[i]`: with
/// `y[i] = x[i] - c[i]` (`c` the gaps' prefix sums) the constraint is `y` non-decreasing, which
/// pool-adjacent-violators solves exactly.
fn isotonic(want: &[f64], weight: &[f64], gaps: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; want.len()];
    for i in 1..want.len() {
        c[i] = c[i - 1] + gaps[i - 1];
    }
    // Blocks of (weight, weighted sum, count).
    let mut blocks: Vec<(f64, f64, usize)> = vec![];
    for i in 0..want.len() {
        blocks.push((weight[i], weight[i] * (want[i] - c[i]), 1));
        while blocks.len() > 1 {
            let (w1, s1, _) = blocks[blocks.len() - 2];
            let (w2, s2, _) = blocks[blocks.len() - 1];
            if s1 / w1 <= s2 / w2 {
                break;
            }
            let (w, s, k) = blocks.pop().unwrap_or((w2, s2, 0));
            if let Some(last) = blocks.last_mut() {
                *last = (last.0 + w, last.1 + s, last.2 + k);
            }
        }
    }
    let mut out = Vec::with_capacity(want.len());
    for (w, s, k) in blocks {
        for _ in 0..k {
            let i = out.len();
            out.push(s / w + c[i]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sz() -> Size {
        Size { w: 100.0, h: 40.0 }
    }

    #[test]
    fn isotonic_keeps_order_and_gaps() {
        let x = isotonic(&[10.0, 0.0, 5.0], &[1.0, 1.0, 1.0], &[20.0, 20.0]);
        assert!(x[1] - x[0] >= 20.0 - 1e-9 && x[2] - x[1] >= 20.0 - 1e-9, "{x:?}");
        // Unconstrained targets are met exactly.
        let x = isotonic(&[0.0, 50.0], &[1.0, 1.0], &[20.0]);
        assert_eq!(x, vec![0.0, 50.0]);
    }

    #[test]
    fn a_diamond_has_no_overlaps_and_flows_down() {
        let sizes = vec![sz(); 4];
        let e = |from, to| Edge { from, to, label: None };
        let p = layout(&sizes, &[e(0, 1), e(0, 2), e(1, 3), e(2, 3)]);
        assert!(p.boxes[0].1 < p.boxes[1].1 && p.boxes[1].1 < p.boxes[3].1);
        assert_eq!(p.boxes[1].1, p.boxes[2].1);
        assert!((p.boxes[1].0 - p.boxes[2].0).abs() >= 100.0);
        for r in &p.routes {
            assert!(r.first().unwrap().1 < r.last().unwrap().1, "{r:?}");
        }
    }

    #[test]
    fn a_labelled_edge_spans_two_ranks_and_places_its_label() {
        let sizes = vec![sz(); 2];
        let p = layout(&sizes, &[Edge { from: 0, to: 1, label: Some(Size { w: 80.0, h: 24.0 }) }]);
        let (lx, ly) = p.labels[0].unwrap();
        assert!(ly > p.boxes[0].1 + 40.0 && ly + 24.0 < p.boxes[1].1);
        assert!(lx + 80.0 <= p.width + 1e-9);
    }

    #[test]
    fn crossings_are_counted() {
        // 0 → 3 and 1 → 2 cross when 2 sits left of 3.
        let v = |kind, rank, down: Vec<usize>| VNode { kind, rank, left: 1.0, right: 1.0, h: 1.0, up: vec![], down };
        let vs = vec![
            v(Kind::Real(0), 0, vec![3]),
            v(Kind::Real(1), 0, vec![2]),
            v(Kind::Real(2), 1, vec![]),
            v(Kind::Real(3), 1, vec![]),
        ];
        assert_eq!(crossings(&vs, &[vec![0, 1], vec![2, 3]]), 1);
        assert_eq!(crossings(&vs, &[vec![0, 1], vec![3, 2]]), 0);
    }
}
