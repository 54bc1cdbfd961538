//! Orthogonal weight initialization computed on the host, in f64, from a seeded stream: the
//! same bits on every machine (libtorch's draws its Gaussian matrix with kernels chosen by the
//! CPU and orthogonalizes it with MKL's QR, whose rounding follows the CPU too).
//!
//! The matrix is what `torch.nn.init.orthogonal_` (CleanRL's init) describes: for a weight of
//! `rows x cols`, the Q factor of a Gaussian matrix of `max x min`, with the signs that make R's
//! diagonal positive, transposed when `rows < cols`, times `gain`. Its rows (or columns, for a
//! tall matrix) are orthonormal up to f32 rounding.

use crate::gaussian::standard_normal_f64;
use rand::Rng;

/// A `rows x cols` orthogonal matrix times `gain`, row-major, drawn from `rng`.
pub fn orthogonal<R: Rng>(rows: usize, cols: usize, gain: f64, rng: &mut R) -> Vec<f32> {
    let (long, short) = (rows.max(cols), rows.min(cols));
    let mut basis: Vec<Vec<f64>> = (0..short)
        .map(|_| (0..long).map(|_| standard_normal_f64(rng)).collect())
        .collect();
    orthonormalize(&mut basis);
    let mut out = vec![0.0f32; rows * cols];
    for (r, row) in out.chunks_exact_mut(cols.max(1)).enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            // A tall matrix has the basis as its columns, a wide one as its rows.
            let q = if rows >= cols {
                basis[c][r]
            } else {
                basis[r][c]
            };
            *v = (gain * q) as f32;
        }
    }
    out
}

/// Gram-Schmidt, each vector orthogonalized twice against the ones before it (so the result is
/// orthonormal to f64 rounding even for nearly dependent draws), then normalized: the Q factor
/// of the QR decomposition whose R has a positive diagonal.
fn orthonormalize(vectors: &mut [Vec<f64>]) {
    for j in 0..vectors.len() {
        let (done, rest) = vectors.split_at_mut(j);
        let v = &mut rest[0];
        for _ in 0..2 {
            for q in done.iter() {
                let along = dot(q, v);
                v.iter_mut().zip(q).for_each(|(x, qi)| *x -= along * qi);
            }
        }
        let norm = dot(v, v).sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// `m m^T` (wide or square) or `m^T m` (tall), which must be `gain^2 I`.
    fn gram(m: &[f32], rows: usize, cols: usize) -> Vec<Vec<f64>> {
        let at = |r: usize, c: usize| f64::from(m[r * cols + c]);
        let n = rows.min(cols);
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if rows >= cols {
                            (0..rows).map(|r| at(r, i) * at(r, j)).sum()
                        } else {
                            (0..cols).map(|c| at(i, c) * at(j, c)).sum()
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn rows_or_columns_are_orthonormal_times_the_gain() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (rows, cols, gain) in [
            (64, 46, 2f64.sqrt()),
            (16, 3, 1.0),
            (1, 32, 0.01),
            (5, 5, 1.0),
        ] {
            let m = orthogonal(rows, cols, gain, &mut rng);
            assert_eq!(m.len(), rows * cols);
            for (i, row) in gram(&m, rows, cols).iter().enumerate() {
                for (j, &g) in row.iter().enumerate() {
                    let want = if i == j { gain * gain } else { 0.0 };
                    // f32 rounding of each entry: relative 2^-24 over up to 64 terms.
                    assert!(
                        (g - want).abs() < 1e-5 * gain * gain,
                        "{rows}x{cols} [{i},{j}]: {g}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_stream_names_the_matrix_and_a_hand_case_holds() {
        let draw = |seed| orthogonal(8, 4, 1.0, &mut ChaCha8Rng::seed_from_u64(seed));
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        // One column: the normalized Gaussian vector itself (positive R), so its first entry
        // has the sign of the first draw.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let first = standard_normal_f64(&mut ChaCha8Rng::seed_from_u64(9));
        let col = orthogonal(3, 1, 2.0, &mut rng);
        assert_eq!(col[0].signum(), first.signum() as f32);
        let norm: f64 = col
            .iter()
            .map(|&v| f64::from(v).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((norm - 2.0).abs() < 1e-6, "{norm}");
    }
}
