//! Ordinary least squares: a line `y = a + b x` and a plane
//! `y = a + b x1 + c x2`, with how well they fit.
//!
//! The rule: the coefficients minimise the sum of squared residuals; R^2
//! is `1 - SS_res / SS_tot` (1 when every point lies on the fit, and by
//! convention 1 when the points do not vary at all and lie on it).

use serde::Serialize;

/// A fitted line and its quality.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Line {
    pub intercept: f64,
    pub slope: f64,
    pub r2: f64,
    /// Root mean square of the residuals.
    pub rms: f64,
    /// The largest residual, in absolute value.
    pub max_error: f64,
    pub points: usize,
    /// False when the x values do not vary: the slope is then 0 and the
    /// intercept the mean, and nothing is known of the slope.
    pub slope_known: bool,
}

impl Line {
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

/// Fits `y = intercept + slope * x` to `points`.
pub fn fit_line(points: &[(f64, f64)]) -> Line {
    let n = points.len() as f64;
    if points.is_empty() {
        return Line {
            intercept: 0.0,
            slope: 0.0,
            r2: 0.0,
            rms: 0.0,
            max_error: 0.0,
            points: 0,
            slope_known: false,
        };
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope_known = sxx > 0.0;
    let slope = if slope_known { sxy / sxx } else { 0.0 };
    let intercept = my - slope * mx;
    let (r2, rms, max_error) = quality(points.iter().map(|&(x, y)| (y, intercept + slope * x)));
    Line {
        intercept,
        slope,
        r2,
        rms,
        max_error,
        points: points.len(),
        slope_known,
    }
}

/// R^2, RMS and maximum absolute residual of `(observed, predicted)` pairs.
pub(crate) fn quality(pairs: impl Iterator<Item = (f64, f64)> + Clone) -> (f64, f64, f64) {
    let n = pairs.clone().count() as f64;
    if n == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let mean = pairs.clone().map(|p| p.0).sum::<f64>() / n;
    let ss_tot: f64 = pairs.clone().map(|p| (p.0 - mean).powi(2)).sum();
    let ss_res: f64 = pairs.clone().map(|p| (p.0 - p.1).powi(2)).sum();
    let max_error = pairs.map(|p| (p.0 - p.1).abs()).fold(0.0, f64::max);
    // Sums of exact integer counts leave rounding dust: a residual this
    // small against the data's scale is a perfect fit.
    let dust = 1e-9 * (mean.abs() + 1.0);
    let r2 = if ss_res.sqrt() / n.sqrt() <= dust {
        1.0
    } else if ss_tot == 0.0 {
        0.0
    } else {
        1.0 - ss_res / ss_tot
    };
    (r2, (ss_res / n).sqrt(), max_error)
}

/// Fits `y = a + b x1 + c x2` to `(x1, x2, y)` points: `[a, b, c]`, or
/// `None` when the system is singular (x1 and x2 proportional, or too
/// few points).
pub fn fit_plane(points: &[(f64, f64, f64)]) -> Option<[f64; 3]> {
    // Normal equations A^T A w = A^T y for rows [1, x1, x2].
    let mut m = [[0.0f64; 4]; 3];
    for &(x1, x2, y) in points {
        let row = [1.0, x1, x2];
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += row[i] * row[j];
            }
            m[i][3] += row[i] * y;
        }
    }
    solve3(m)
}

/// Gaussian elimination with partial pivoting on an augmented 3x4 matrix.
fn solve3(mut m: [[f64; 4]; 3]) -> Option<[f64; 3]> {
    let scale = m.iter().flatten().map(|v| v.abs()).fold(0.0, f64::max);
    for col in 0..3 {
        let pivot = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() <= 1e-12 * scale.max(1.0) {
            return None;
        }
        m.swap(col, pivot);
        for row in 0..3 {
            if row != col {
                let f = m[row][col] / m[col][col];
                let pivot_row = m[col];
                for (cell, p) in m[row].iter_mut().zip(pivot_row).skip(col) {
                    *cell -= f * p;
                }
            }
        }
    }
    Some([m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_line_is_found_exactly() {
        let pts: Vec<(f64, f64)> = (0..20)
            .map(|i| {
                (
                    64.0 + 32.0 * i as f64,
                    17.0 + 3.0 * (64.0 + 32.0 * i as f64),
                )
            })
            .collect();
        let l = fit_line(&pts);
        assert_eq!(
            (l.intercept, l.slope, l.r2, l.max_error),
            (17.0, 3.0, 1.0, 0.0)
        );
        assert!(l.slope_known);
    }

    #[test]
    fn noise_lowers_r2_and_shows_in_the_residuals() {
        let pts = [(1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (4.0, 5.0)];
        let l = fit_line(&pts);
        // By hand: mean x 2.5, mean y 2.75, sxx 5, sxy 5.5.
        assert!((l.slope - 1.1).abs() < 1e-12);
        assert!((l.intercept - 0.0).abs() < 1e-12);
        assert!(l.r2 > 0.5 && l.r2 < 0.9, "{}", l.r2);
        assert!((l.max_error - 1.3).abs() < 1e-12);
    }

    #[test]
    fn one_x_value_gives_the_mean_and_no_slope() {
        let l = fit_line(&[(64.0, 10.0), (64.0, 12.0)]);
        assert_eq!((l.intercept, l.slope, l.slope_known), (11.0, 0.0, false));
    }

    #[test]
    fn a_plane_through_exact_points() {
        let pts: Vec<(f64, f64, f64)> = (0..10)
            .flat_map(|i| (0..10).map(move |j| (i as f64, (j * j) as f64)))
            .map(|(a, b)| (a, b, 5.0 + 2.0 * a + 0.5 * b))
            .collect();
        let w = fit_plane(&pts).unwrap();
        for (got, want) in w.iter().zip([5.0, 2.0, 0.5]) {
            assert!((got - want).abs() < 1e-9, "{w:?}");
        }
        // Proportional inputs cannot be told apart.
        let pts: Vec<_> = (0..10)
            .map(|i| (i as f64, 2.0 * i as f64, i as f64))
            .collect();
        assert_eq!(fit_plane(&pts), None);
    }
}
