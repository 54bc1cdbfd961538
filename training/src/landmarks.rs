//! MOCC's landmark objectives: the strictly positive simplex grid of step 1/n (omega = C(n-1, 2)
//! points), its neighbour relation and the walk that visits every landmark neighbour to
//! neighbour.

use serde::{Deserialize, Serialize};

/// An objective: weights of throughput, latency and loss, positive, summing to 1.
pub use mocc_policy::objective::Objective;

/// How the landmarks are chosen in a config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LandmarkSpec {
    /// The number of landmarks: C(n-1, 2) for some n >= 4 (3, 6, 10, 15, ..., 36, ..., 171).
    Omega(usize),
    /// The grid step's denominator n (>= 4).
    StepDenominator(usize),
    /// An explicit list (neighbours are then those at the smallest pairwise distance).
    List(Vec<Objective>),
}

/// Landmarks, with integer grid coordinates when they come from a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Landmarks {
    points: Vec<Objective>,
    grid: Option<(usize, Vec<[usize; 3]>)>,
}

/// omega for grid denominator n: C(n-1, 2).
pub fn omega_of(n: usize) -> usize {
    (n - 1) * (n - 2) / 2
}

/// Largest grid denominator accepted (omega = 19,701).
pub const MAX_DENOMINATOR: usize = 200;

/// The grid denominator whose omega is `omega`, if any (up to `MAX_DENOMINATOR`).
pub fn denominator_for_omega(omega: usize) -> Option<usize> {
    (4..=MAX_DENOMINATOR).find(|&n| omega_of(n) == omega)
}

impl Landmarks {
    /// Resolves a spec; errors name the field.
    pub fn from_spec(spec: &LandmarkSpec) -> Result<Self, String> {
        match spec {
            LandmarkSpec::Omega(omega) => {
                let n = denominator_for_omega(*omega).ok_or_else(|| {
                    let valid: Vec<String> = (4..=20).map(|n| omega_of(n).to_string()).collect();
                    format!(
                        "landmarks.omega: {omega} is not C(n-1, 2) for any n >= 4; valid values: {}, ...",
                        valid.join(", ")
                    )
                })?;
                Ok(Self::grid(n))
            }
            LandmarkSpec::StepDenominator(n) if (4..=MAX_DENOMINATOR).contains(n) => {
                Ok(Self::grid(*n))
            }
            LandmarkSpec::StepDenominator(n) => Err(format!(
                "landmarks.step_denominator: must lie in [4, {MAX_DENOMINATOR}] (got {n})"
            )),
            LandmarkSpec::List(points) => {
                if points.is_empty() {
                    return Err("landmarks.list: at least one objective is required".into());
                }
                for (i, w) in points.iter().enumerate() {
                    let sum: f64 = w.iter().sum();
                    if w.iter().any(|x| !x.is_finite() || *x <= 0.0) || (sum - 1.0).abs() > 1e-6 {
                        return Err(format!(
                            "landmarks.list[{i}]: weights must be positive and sum to 1 (got {w:?})"
                        ));
                    }
                }
                Ok(Self {
                    points: points.clone(),
                    grid: None,
                })
            }
        }
    }

    /// The grid of step 1/n: all (i, j, k)/n with i, j, k >= 1 and i + j + k = n, ordered by
    /// i, then j.
    pub fn grid(n: usize) -> Self {
        let mut coords = Vec::new();
        for i in 1..n - 1 {
            for j in 1..n - i {
                coords.push([i, j, n - i - j]);
            }
        }
        let points = coords
            .iter()
            .map(|c| c.map(|x| x as f64 / n as f64))
            .collect();
        Self {
            points,
            grid: Some((n, coords)),
        }
    }

    /// Number of landmarks (omega).
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Never true for a resolved set.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The objectives.
    pub fn points(&self) -> &[Objective] {
        &self.points
    }

    /// Whether landmarks `a` and `b` are neighbours: on a grid, they differ by +-1/n in exactly
    /// two coordinates; in a list, they are at the smallest pairwise distance (within 1e-9).
    pub fn are_neighbours(&self, a: usize, b: usize) -> bool {
        if a == b {
            return false;
        }
        match &self.grid {
            Some((_, c)) => {
                let d: Vec<i64> = (0..3).map(|k| c[a][k] as i64 - c[b][k] as i64).collect();
                d.iter().filter(|&&x| x != 0).count() == 2 && d.iter().all(|x| x.abs() <= 1)
            }
            None => {
                let min = self.min_distance();
                (dist(&self.points[a], &self.points[b]) - min).abs() < 1e-9
            }
        }
    }

    fn min_distance(&self) -> f64 {
        let mut min = f64::INFINITY;
        for a in 0..self.len() {
            for b in a + 1..self.len() {
                min = min.min(dist(&self.points[a], &self.points[b]));
            }
        }
        min
    }

    /// Neighbours of landmark `a`.
    pub fn neighbours(&self, a: usize) -> Vec<usize> {
        (0..self.len())
            .filter(|&b| self.are_neighbours(a, b))
            .collect()
    }

    /// The landmark nearest to `w` (lowest index on ties).
    pub fn nearest(&self, w: &Objective) -> usize {
        let mut best = 0;
        for i in 1..self.len() {
            if dist(&self.points[i], w) < dist(&self.points[best], w) - 1e-12 {
                best = i;
            }
        }
        best
    }

    /// One cycle of the traversal, as landmark indices. On a grid: a boustrophedon over the
    /// rows of equal throughput weight (every consecutive pair are neighbours), then the same
    /// path back without its ends, so the cycle repeats without a jump. A list is walked
    /// greedily to the nearest unvisited landmark (jumps are unavoidable there in general).
    pub fn walk(&self) -> Vec<usize> {
        let forward = match &self.grid {
            Some((n, coords)) => {
                let mut order = Vec::with_capacity(self.len());
                for (row, i) in (1..n - 1).enumerate() {
                    let mut idx: Vec<usize> =
                        (0..coords.len()).filter(|&p| coords[p][0] == i).collect();
                    if row % 2 == 1 {
                        idx.reverse();
                    }
                    order.extend(idx);
                }
                order
            }
            None => self.greedy_walk(),
        };
        let mut cycle = forward.clone();
        if forward.len() > 2 {
            cycle.extend(forward[1..forward.len() - 1].iter().rev());
        }
        cycle
    }

    fn greedy_walk(&self) -> Vec<usize> {
        let mut order = vec![0];
        let mut left: Vec<usize> = (1..self.len()).collect();
        while !left.is_empty() {
            let last = self.points[*order.last().unwrap_or(&0)];
            let (k, _) = left
                .iter()
                .enumerate()
                .min_by(|a, b| {
                    dist(&self.points[*a.1], &last).total_cmp(&dist(&self.points[*b.1], &last))
                })
                .unwrap_or((0, &0));
            order.push(left.remove(k));
        }
        order
    }
}

fn dist(a: &Objective, b: &Objective) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// MOCC's default bootstrap objectives: (0.6, 0.3, 0.1) and its cyclic shifts.
pub fn default_bootstrap() -> Vec<Objective> {
    vec![[0.6, 0.3, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_sizes_match_omega() {
        for (n, omega) in [(4, 3), (5, 6), (6, 10), (10, 36), (20, 171)] {
            assert_eq!(Landmarks::grid(n).len(), omega);
            assert_eq!(omega_of(n), omega);
            assert_eq!(
                Landmarks::from_spec(&LandmarkSpec::Omega(omega))
                    .unwrap()
                    .len(),
                omega
            );
        }
        let e = Landmarks::from_spec(&LandmarkSpec::Omega(7)).unwrap_err();
        assert!(
            e.contains("landmarks.omega") && e.contains("3, 6, 10, 15, 21, 28, 36"),
            "{e}"
        );
        for w in Landmarks::grid(10).points() {
            assert!(w.iter().all(|&x| x > 0.0));
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn neighbour_relation_is_the_triangular_lattice() {
        let l = Landmarks::grid(10);
        let max = (0..l.len()).map(|a| l.neighbours(a).len()).max().unwrap();
        assert_eq!(max, 6);
        // (1,1,8)/10 is a corner: neighbours (2,1,7)/10... only (1,2,7) and (2,1,7).
        let corner = l.nearest(&[0.1, 0.1, 0.8]);
        assert_eq!(l.neighbours(corner).len(), 2);
        for a in 0..l.len() {
            for b in l.neighbours(a) {
                assert!(l.are_neighbours(b, a), "symmetric");
                let d: Vec<f64> = (0..3)
                    .map(|k| l.points()[a][k] - l.points()[b][k])
                    .collect();
                assert_eq!(d.iter().filter(|x| x.abs() > 1e-12).count(), 2);
                assert!(d.iter().all(|x| x.abs() < 0.1 + 1e-12));
            }
        }
        // The omega = 3 grid: all three points are mutual neighbours.
        let t = Landmarks::grid(4);
        assert!(t.are_neighbours(0, 1) && t.are_neighbours(1, 2) && t.are_neighbours(0, 2));
    }

    #[test]
    fn walk_visits_everything_neighbour_to_neighbour_and_cycles() {
        for n in [4, 5, 6, 10, 20] {
            let l = Landmarks::grid(n);
            let w = l.walk();
            let mut seen = vec![false; l.len()];
            for &i in &w {
                seen[i] = true;
            }
            assert!(seen.iter().all(|&s| s), "n={n}: every landmark visited");
            for pair in w.windows(2) {
                assert!(l.are_neighbours(pair[0], pair[1]), "n={n}: {pair:?}");
            }
            // Wrapping around the cycle is a neighbour step too.
            assert!(l.are_neighbours(*w.last().unwrap(), w[0]), "n={n}: wrap");
        }
    }

    #[test]
    fn bootstrap_snaps_to_the_grid() {
        let l = Landmarks::grid(10);
        let snapped: Vec<Objective> = default_bootstrap()
            .iter()
            .map(|w| l.points()[l.nearest(w)])
            .collect();
        assert_eq!(snapped[0], [0.6, 0.3, 0.1]);
        assert_eq!(snapped[1], [0.1, 0.6, 0.3]);
        let coarse = Landmarks::grid(4);
        assert_eq!(
            coarse.points()[coarse.nearest(&[0.6, 0.3, 0.1])],
            [0.5, 0.25, 0.25]
        );
    }
}
