//! Properties of tree generation and of the tree all-reduce schedule, on the presets and
//! on random connected topologies.

use proptest::prelude::{any, prop, prop_assert, prop_assert_eq, proptest, Just, ProptestConfig, Strategy as Gen};

use super::exhaustive::search;
use super::weights::{Weights, EPS};
use super::*;

const PRESET_NAMES: [&str; 3] = ["p3.16xlarge", "dgx-a100", "pcie-8"];

/// Random connected topologies of 2..=`max` GPUs: weights 0..=3 on every pair, plus a
/// random spanning tree of links (weight 1 where the pair had none) so that all connect.
fn topologies(max: usize) -> impl Gen<Value = GpuTopology> {
    (2..=max)
        .prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec(0i64..=3, n * (n - 1) / 2),
                prop::collection::vec(any::<prop::sample::Index>(), n - 1),
            )
        })
        .prop_map(|(n, weights, parents)| connected(n, &weights, |v| parents[v - 1].index(v)))
}

/// `n` GPUs with `weights` on the pairs (i < j, row order), plus a link of weight 1
/// from each GPU `v >= 1` to `parent(v) < v` where the pair had none.
fn connected(n: usize, weights: &[i64], parent: impl Fn(usize) -> usize) -> GpuTopology {
    let mut rows = vec![vec![0i64; n]; n];
    let pairs = (0..n).flat_map(|i| ((i + 1)..n).map(move |j| (i, j)));
    for ((i, j), &w) in pairs.zip(weights) {
        rows[i][j] = w;
        rows[j][i] = w;
    }
    for (v, p) in (1..n).map(|v| (v, parent(v))) {
        if rows[p][v] == 0 {
            rows[p][v] = 1;
            rows[v][p] = 1;
        }
    }
    GpuTopology::from_adjacency(&rows).expect("connected by construction")
}

/// Checks the tree is over the topology's GPUs, on its links, and of full height.
fn assert_balanced_on(tree: &Tree, t: &GpuTopology) {
    let n = t.gpus();
    assert_eq!(tree.gpus(), n);
    assert!(tree.uses_links_of(t), "{tree:?} uses a missing link");
    assert_eq!(tree.edges().len(), n - 1);
    assert_eq!(tree.height(), height_for(n));
    // Tree::new re-checks span, one parent each, one edge per GPU per level, level order.
    assert_eq!(&Tree::new(n, tree.root(), tree.edges().to_vec()).unwrap(), tree);
    // More than 2^(h-1) GPUs cannot be gathered in h-1 levels: the last level is used.
    if n > 1 {
        assert_eq!(tree.edges().iter().map(|e| e.level).max(), Some(height_for(n)));
    }
}

/// Best tree weight by plain enumeration, independent of the bisection recursion: every
/// non-root GPU picks a parent it has a link to and a level, pruned when a GPU would
/// have two edges at one level, and [`Tree::new`] judges the rest.
fn brute_force_best(t: &GpuTopology, root: usize) -> Option<u64> {
    fn go(
        t: &GpuTopology,
        root: usize,
        others: &[usize],
        k: usize,
        used: &mut [u64],
        edges: &mut Vec<TreeEdge>,
        best: &mut Option<u64>,
    ) {
        let n = t.gpus();
        if k == others.len() {
            if let Ok(tree) = Tree::new(n, root, edges.clone()) {
                let w = tree.weight(t);
                if best.is_none_or(|b| w > b) {
                    *best = Some(w);
                }
            }
            return;
        }
        let child = others[k];
        for parent in (0..n).filter(|&p| p != child && t.weight(p, child) > 0) {
            for level in 1..=height_for(n) {
                let bit = 1 << level;
                if used[parent] & bit != 0 || used[child] & bit != 0 {
                    continue;
                }
                used[parent] |= bit;
                used[child] |= bit;
                edges.push(TreeEdge { level, parent, child });
                go(t, root, others, k + 1, used, edges, best);
                edges.pop();
                used[parent] &= !bit;
                used[child] &= !bit;
            }
        }
    }
    let others: Vec<usize> = (0..t.gpus()).filter(|&g| g != root).collect();
    let mut best = None;
    go(t, root, &others, 0, &mut vec![0; t.gpus()], &mut Vec::new(), &mut best);
    best
}

/// Runs the schedule on integer vectors, a round at a time with every send of a round
/// read before any receive is applied (the transfers of a round run concurrently).
fn execute(s: &Schedule, data: &mut [Vec<i64>]) {
    for round in s.rounds() {
        let mut receivers = std::collections::HashSet::new();
        for t in round {
            assert!(receivers.insert((t.to, t.slice)), "GPU {} receives slice {} twice in a round", t.to, t.slice);
        }
        let sent: Vec<(Transfer, Vec<i64>)> =
            round.iter().map(|t| (*t, data[t.from][s.slices()[t.slice].clone()].to_vec())).collect();
        for (t, values) in sent {
            let range = s.slices()[t.slice].clone();
            for (dst, v) in data[t.to][range].iter_mut().zip(values) {
                match t.op {
                    Op::Reduce => *dst += v,
                    Op::Copy => *dst = v,
                }
            }
        }
    }
}

/// Every GPU ends with the element-wise sum.
fn assert_allreduce(s: &Schedule) {
    let (n, len) = (s.gpus(), s.elements());
    let mut data: Vec<Vec<i64>> = (0..n).map(|g| (0..len).map(|i| (g * 1000 + i * 7 + 1) as i64).collect()).collect();
    let sum: Vec<i64> = (0..len).map(|i| (0..n).map(|g| (g * 1000 + i * 7 + 1) as i64).sum()).collect();
    execute(s, &mut data);
    for (g, d) in data.iter().enumerate() {
        assert_eq!(d, &sum, "GPU {g} of {n}, {len} elements, {} slices", s.slices().len());
    }
}

fn trees(t: &GpuTopology, count: usize, penalty: f64) -> Vec<Tree> {
    generate_trees(t, count, penalty).unwrap().into_iter().map(|g| g.tree).collect()
}

/// Link reuse across trees: the sum over links of (trees using it - 1).
fn reuse(trees: &[Tree]) -> usize {
    let mut uses = std::collections::HashMap::new();
    for l in trees.iter().flat_map(Tree::links) {
        *uses.entry(l).or_insert(0usize) += 1;
    }
    uses.values().map(|u| u - 1).sum()
}

#[test]
fn preset_trees_are_balanced_and_as_heavy_as_the_best() {
    for name in PRESET_NAMES {
        let t = GpuTopology::preset(name).unwrap();
        for g in generate_trees(&t, 8, DEFAULT_PENALTY).unwrap() {
            assert_balanced_on(&g.tree, &t);
        }
        for root in 0..8 {
            let best = best_tree(&t, root).unwrap();
            assert_balanced_on(&best, &t);
            let g = generate_tree(&t, root).unwrap();
            assert_eq!(g.tree.root(), root);
            assert_eq!(g.tree.weight(&t), best.weight(&t), "{name} root {root}");
            assert_eq!(g.score, best.weight(&t) as f64);
        }
    }
}

#[test]
fn best_tree_weights_of_the_presets() {
    // p3.16xlarge: no balanced tree uses only double NVLinks (they form one 8-cycle, and
    // a path of 8 GPUs has no root within 3 links of all); the best uses 6 of them and
    // one single NVLink.
    let want = [("p3.16xlarge", 20), ("dgx-a100", 21), ("pcie-8", 7)];
    for (name, weight) in want {
        let t = GpuTopology::preset(name).unwrap();
        for root in 0..8 {
            assert_eq!(best_tree(&t, root).unwrap().weight(&t), weight, "{name} root {root}");
        }
    }
}

/// What the seed's heuristic alone achieves; the generator's exhaustive check covers the
/// gap. Min-cut bisection of p3.16xlarge from GPU 0 splits the two quads and keeps the
/// single NVLinks for level 2, where two of them are used, instead of spending one at
/// level 1 (0-1) and the double links 0-4 and 1-5 at level 2.
#[test]
fn kernighan_lin_alone_on_the_presets() {
    for name in ["dgx-a100", "pcie-8"] {
        let t = GpuTopology::preset(name).unwrap();
        for root in 0..8 {
            let kl = kernighan_lin_tree(&t, root).unwrap().unwrap();
            assert_eq!(kl.weight(&t), best_tree(&t, root).unwrap().weight(&t));
            assert_eq!(generate_tree(&t, root).unwrap().method, Method::KernighanLin);
        }
    }
    let t = GpuTopology::p3_16xlarge();
    let kl: Vec<u64> = (0..8).map(|r| kernighan_lin_tree(&t, r).unwrap().unwrap().weight(&t)).collect();
    assert_eq!(kl, vec![19, 19, 20, 20, 19, 19, 20, 20]);
    let methods: Vec<Method> = (0..8).map(|r| generate_tree(&t, r).unwrap().method).collect();
    for (root, m) in methods.iter().enumerate() {
        let want = if kl[root] == 20 { Method::KernighanLin } else { Method::Exhaustive };
        assert_eq!(*m, want, "root {root}");
    }
}

#[test]
fn kernighan_lin_gets_stuck_where_the_root_has_no_link_across() {
    // Root 4 has no link to GPU 3. The first bisection keeps 4 with its double link to 0
    // and puts 3 on the root's side ({0, 3, 4}: 4-0 and 0-3 inside, the least cut); the
    // second bisection of {0, 3, 4} keeps 4-0 and leaves 3 alone across, where the root
    // has no link. Exhaustive search finds 4-0 at level 1, then 4-2 and 0-3, then 2-1.
    let rows =
        vec![vec![0, 1, 2, 2, 3], vec![1, 0, 3, 1, 1], vec![2, 3, 0, 2, 1], vec![2, 1, 2, 0, 0], vec![3, 1, 1, 0, 0]];
    let t = GpuTopology::from_adjacency(&rows).unwrap();
    assert_eq!(kernighan_lin_tree(&t, 4).unwrap(), None);
    let g = generate_tree(&t, 4).unwrap();
    assert_eq!(g.method, Method::Exhaustive);
    assert_balanced_on(&g.tree, &t);
    assert_eq!(g.tree.weight(&t), 10);
    assert_eq!(brute_force_best(&t, 4), Some(10));
}

#[test]
fn the_penalty_moves_a_second_tree_off_used_links() {
    // On NVSwitch all links are equal, so every tree is as good as any other: without a
    // penalty the second tree reuses links of the first (deterministic ties), with it
    // the second tree takes 7 fresh links.
    let t = GpuTopology::dgx_a100();
    let plain = trees(&t, 2, 1.0);
    assert!(reuse(&plain) > 0, "{plain:?}");
    let penalised = trees(&t, 2, DEFAULT_PENALTY);
    assert_eq!(reuse(&penalised), 0, "{penalised:?}");
    assert_eq!(penalised[1].weight(&t), plain[1].weight(&t));
    // Over one tree per GPU, the penalty spreads the trees over more links.
    for name in PRESET_NAMES {
        let t = GpuTopology::preset(name).unwrap();
        assert!(reuse(&trees(&t, 8, DEFAULT_PENALTY)) < reuse(&trees(&t, 8, 1.0)), "{name}");
    }
}

#[test]
fn a_strong_penalty_trades_weight_for_fresh_links() {
    // p3.16xlarge: at 0.7 a used double link (2.1) still beats a fresh single NVLink (2);
    // at 0.5 (1.5) it does not, so later trees reuse fewer links at some loss of weight.
    let t = GpuTopology::p3_16xlarge();
    let mild = trees(&t, 8, DEFAULT_PENALTY);
    let strong = trees(&t, 8, 0.5);
    assert!(reuse(&strong) <= reuse(&mild));
    let total = |ts: &[Tree]| ts.iter().map(|x| x.weight(&t)).sum::<u64>();
    assert!(total(&strong) <= total(&mild));
}

#[test]
fn generation_is_deterministic() {
    for name in PRESET_NAMES {
        let t = GpuTopology::preset(name).unwrap();
        let a = generate_trees(&t, 8, DEFAULT_PENALTY).unwrap();
        let b = generate_trees(&t, 8, DEFAULT_PENALTY).unwrap();
        assert_eq!(a, b);
        let s = Schedule::new(&trees(&t, 8, DEFAULT_PENALTY), 1001).unwrap();
        assert_eq!(s, Schedule::new(&trees(&t, 8, DEFAULT_PENALTY), 1001).unwrap());
    }
}

#[test]
fn bad_options_name_their_field() {
    let t = GpuTopology::pcie_8();
    assert_eq!(generate_trees(&t, 0, 0.7).unwrap_err().field(), "trees");
    for p in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
        assert_eq!(generate_trees(&t, 2, p).unwrap_err().field(), "penalty", "{p}");
    }
    assert_eq!(generate_tree(&t, 8).unwrap_err().field(), "root");
    assert_eq!(best_tree(&t, 9).unwrap_err().field(), "root");
    assert_eq!(kernighan_lin_tree(&t, 8).unwrap_err().field(), "root");
    // A chain of 5 GPUs from its end: connected, but no balanced tree of height 3.
    let mut rows = vec![vec![0i64; 5]; 5];
    for i in 0..4 {
        rows[i][i + 1] = 2;
        rows[i + 1][i] = 2;
    }
    let chain = GpuTopology::from_adjacency(&rows).unwrap();
    let e = generate_trees(&chain, 5, 0.7).unwrap_err();
    assert_eq!(e.field(), "adjacency");
    assert!(e.to_string().contains("PCIe"), "{e}");
    assert_eq!(
        GpuTopology::all_pairs(13, 1).map(|t| best_tree(&t, 0).unwrap_err().field().to_string()).unwrap(),
        "gpus"
    );
    assert_eq!(Schedule::new(&[], 10).unwrap_err().field(), "trees");
    let mixed =
        [generate_tree(&t, 0).unwrap().tree, generate_tree(&GpuTopology::all_pairs(4, 1).unwrap(), 0).unwrap().tree];
    assert_eq!(Schedule::new(&mixed, 10).unwrap_err().field(), "trees");
}

#[test]
fn twelve_gpus_are_searched_exhaustively_and_more_by_the_heuristic() {
    // Two p3.16xlarge-like halves of 6 are not needed: a ring with PCIe chords will do.
    let n = 12;
    let mut rows = vec![vec![1i64; n]; n];
    for i in 0..n {
        rows[i][i] = 0;
        rows[i][(i + 1) % n] = 3;
        rows[(i + 1) % n][i] = 3;
    }
    let t = GpuTopology::from_adjacency(&rows).unwrap();
    let g = generate_tree(&t, 0).unwrap();
    assert_balanced_on(&g.tree, &t);
    assert_eq!(g.tree.weight(&t), best_tree(&t, 0).unwrap().weight(&t));
    // 16 GPUs on NVSwitch: beyond the exhaustive search, Kernighan-Lin alone.
    let big = GpuTopology::all_pairs(16, 3).unwrap();
    for g in generate_trees(&big, 16, DEFAULT_PENALTY).unwrap() {
        assert_eq!(g.method, Method::KernighanLin);
        assert_balanced_on(&g.tree, &big);
        assert_eq!(g.tree.weight(&big), 45);
    }
}

#[test]
fn schedules_compute_the_sum_on_every_gpu() {
    for name in PRESET_NAMES {
        let t = GpuTopology::preset(name).unwrap();
        let all = trees(&t, 8, DEFAULT_PENALTY);
        for elements in [0, 1, 7, 8, 9, 100, 1001] {
            assert_allreduce(&Schedule::new(&all[..1], elements).unwrap());
            assert_allreduce(&Schedule::new(&all, elements).unwrap());
        }
    }
    for n in 1..=9 {
        let t = GpuTopology::all_pairs(n, 1).unwrap();
        for count in [1, n, 2 * n] {
            assert_allreduce(&Schedule::new(&trees(&t, count, DEFAULT_PENALTY), 37).unwrap());
        }
    }
}

#[test]
fn schedule_shape() {
    let t = GpuTopology::p3_16xlarge();
    let all = trees(&t, 8, DEFAULT_PENALTY);
    let s = Schedule::new(&all, 1003).unwrap();
    assert_eq!(s.rounds().len(), 6);
    assert_eq!(s.slices().len(), 8);
    assert_eq!(s.slices()[0], 0..126);
    assert_eq!(s.slices()[2], 252..378);
    assert_eq!(s.slices()[3], 378..503);
    assert_eq!(s.slices()[7].end, 1003);
    assert_eq!(s.roots(), &[0, 1, 2, 3, 4, 5, 6, 7]);
    // Reduce rounds first, deepest level first: 4 + 2 + 1 transfers per tree.
    let per_round: Vec<usize> = s.rounds().iter().map(Vec::len).collect();
    assert_eq!(per_round, vec![32, 16, 8, 8, 16, 32]);
    assert!(s.rounds()[..3].iter().flatten().all(|x| x.op == Op::Reduce));
    assert!(s.rounds()[3..].iter().flatten().all(|x| x.op == Op::Copy));
    // Broadcast mirrors the reduce.
    for r in 0..3 {
        let up: Vec<(usize, usize, usize)> = s.rounds()[r].iter().map(|x| (x.slice, x.to, x.from)).collect();
        let down: Vec<(usize, usize, usize)> = s.rounds()[5 - r].iter().map(|x| (x.slice, x.from, x.to)).collect();
        assert_eq!(up, down);
    }
    // One GPU's view: it is in every tree, so it sends or receives at least once per
    // tree in each phase.
    let mine = s.transfers_of(3);
    assert!(mine.len() >= 16);
    assert!(mine.iter().all(|(_, x)| x.from == 3 || x.to == 3));
    assert!(mine.windows(2).all(|w| w[0].0 <= w[1].0));
    // Below the array bound one tree carries everything; from it on, all trees.
    assert_eq!(Schedule::plan(&all, 1000, DEFAULT_ARRAY_BOUND).unwrap().slices().len(), 1);
    assert_eq!(Schedule::plan(&all, DEFAULT_ARRAY_BOUND, DEFAULT_ARRAY_BOUND).unwrap().slices().len(), 8);
    // Fewer elements than trees: empty slices move nothing.
    let tiny = Schedule::new(&all, 3).unwrap();
    assert!(tiny.rounds().iter().flatten().all(|x| x.slice < 3));
    assert_allreduce(&tiny);
}

#[test]
fn one_gpu_needs_no_transfers() {
    let t = GpuTopology::from_adjacency(&[vec![0]]).unwrap();
    let g = generate_trees(&t, 1, DEFAULT_PENALTY).unwrap();
    assert!(g[0].tree.edges().is_empty());
    let s = Schedule::new(&[g[0].tree.clone()], 5).unwrap();
    assert!(s.rounds().is_empty());
    assert_allreduce(&s);
}

/// The numbers quoted in docs/gputopo.md: how often the seed's heuristic alone is stuck
/// or lighter than the best tree. `cargo test -p tensorwire-core measure_kernighan_lin
/// -- --ignored --nocapture`.
#[test]
#[ignore = "measurement, prints a table"]
fn measure_kernighan_lin() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
    println!("gpus  instances  stuck  lighter");
    for n in 2..=8usize {
        let (mut total, mut stuck, mut lighter) = (0, 0, 0);
        for _ in 0..2000 {
            let weights: Vec<i64> = (0..n * (n - 1) / 2).map(|_| rng.gen_range(0..=3)).collect();
            let parents: Vec<usize> = (1..n).map(|v| rng.gen_range(0..v)).collect();
            let t = connected(n, &weights, |v| parents[v - 1]);
            let root = rng.gen_range(0..n);
            let Ok(best) = best_tree(&t, root) else { continue };
            total += 1;
            match kernighan_lin_tree(&t, root).unwrap() {
                None => stuck += 1,
                Some(k) if k.weight(&t) < best.weight(&t) => lighter += 1,
                Some(_) => {}
            }
        }
        let pct = |x: usize| 100.0 * x as f64 / total as f64;
        println!("{n:>4}  {total:>9}  {:>4.0}%  {:>6.0}%", pct(stuck), pct(lighter));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// The generated tree from each root is balanced and as heavy as exhaustive search
    /// says is possible; where no tree exists both say so.
    #[test]
    fn generated_trees_are_the_heaviest(t in topologies(8), root in any::<prop::sample::Index>()) {
        let root = root.index(t.gpus());
        match (generate_tree(&t, root), best_tree(&t, root)) {
            (Ok(g), Ok(best)) => {
                assert_balanced_on(&g.tree, &t);
                prop_assert_eq!(g.tree.weight(&t), best.weight(&t));
            }
            (Err(a), Err(b)) => {
                prop_assert_eq!(a.field(), "adjacency");
                prop_assert_eq!(b.field(), "adjacency");
            }
            (a, b) => prop_assert!(false, "generator {:?} vs exhaustive {:?}", a, b),
        }
    }

    /// Each of several trees is the heaviest under the penalised weights it was chosen
    /// with, and generating again gives the same trees.
    #[test]
    fn each_tree_is_the_heaviest_under_the_penalty(t in topologies(8), penalty in 0.3f64..=1.0) {
        let n = t.gpus();
        let Ok(generated) = generate_trees(&t, n, penalty) else { return Ok(()) };
        let mut w = Weights::new(&t);
        for (i, g) in generated.iter().enumerate() {
            assert_balanced_on(&g.tree, &t);
            prop_assert_eq!(g.tree.root(), i % n);
            let (best, _) = search(&w, i % n).unwrap();
            prop_assert!((g.score - best).abs() < EPS, "tree {} scores {} but {} is possible", i, g.score, best);
            prop_assert!((w.score(&g.tree) - g.score).abs() < EPS);
            w.penalise(&g.tree, penalty);
        }
        prop_assert_eq!(generate_trees(&t, n, penalty).unwrap(), generated);
    }

    /// The exhaustive search agrees with plain enumeration of all leveled spanning trees.
    #[test]
    fn exhaustive_search_agrees_with_plain_enumeration(t in topologies(6), root in any::<prop::sample::Index>()) {
        let root = root.index(t.gpus());
        prop_assert_eq!(best_tree(&t, root).ok().map(|b| b.weight(&t)), brute_force_best(&t, root));
    }

    /// Single- and multi-tree schedules leave the sum on every GPU.
    #[test]
    fn random_schedules_compute_the_sum(t in topologies(8), count in 1usize..=10, elements in 0usize..200) {
        if let Ok(generated) = generate_trees(&t, count, DEFAULT_PENALTY) {
            let ts: Vec<Tree> = generated.into_iter().map(|g| g.tree).collect();
            assert_allreduce(&Schedule::new(&ts, elements).unwrap());
        }
    }
}

#[test]
fn trees_are_bounded_by_their_build_work_but_one_per_gpu_always_builds() {
    // 4,096 trees of a 128-GPU full mesh took 31 s (`topology --trees`, no flow budget).
    use super::generate::trees_within_budget;
    assert_eq!(trees_within_budget(8), crate::limits::MAX_TREES);
    assert_eq!(trees_within_budget(64), 1024);
    assert_eq!(trees_within_budget(128), 128);
}
