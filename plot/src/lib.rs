//! mocc-plot: the figure engine every mocc figure is drawn with (design.md, section 7).
//!
//! - [`style`]: one colour and line style per scheme in every figure, the reference lines, the
//!   panel limit ([`style::MAX_LINES_PER_PANEL`]).
//! - [`axes`]: axes with units, linear and logarithmic, their ticks.
//! - [`chart`]: figures of panels (small multiples), the legend outside the data, PNG output
//!   and [`chart::PlotError`].
//! - [`testing`]: what tests that draw figures share.
//!
//! No libtorch, no simulator: figures of training runs, evaluations and real paths all build
//! on it.

pub mod axes;
pub mod chart;
pub mod style;
pub mod testing;
