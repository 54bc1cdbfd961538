//! Who looks like what in every figure: each congestion-control scheme's one colour
//! ([`SCHEMES`], the only owner of scheme colours), dashes for a second line of a scheme, and
//! the display names of policies.

use plotters::prelude::*;

/// A congestion-control scheme with its fixed colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    /// Key the policy name is matched against (`mocc`, `cubic`, ...).
    pub key: &'static str,
    /// Name in legends.
    pub name: &'static str,
    /// Its colour in every figure.
    pub colour: RGBColor,
    /// A classic (hand-designed) controller rather than a learned policy.
    pub classic: bool,
}

/// Every scheme with a colour of its own: Tableau 10 for the first eight, and Tableau 20's
/// light tone of the scheme each later one extends or belongs with (BBRv3 and LeoCC beside
/// BBR's green, SaTCP beside Cubic's orange, the PCC family beside Vivace and Copa).
pub const SCHEMES: [Scheme; 14] = [
    Scheme {
        key: "mocc",
        name: "MOCC",
        colour: RGBColor(0xd6, 0x27, 0x28),
        classic: false,
    },
    Scheme {
        key: "aurora",
        name: "Aurora",
        colour: RGBColor(0x1f, 0x77, 0xb4),
        classic: false,
    },
    Scheme {
        key: "cubic",
        name: "Cubic",
        colour: RGBColor(0xff, 0x7f, 0x0e),
        classic: true,
    },
    Scheme {
        key: "bbr",
        name: "BBR",
        colour: RGBColor(0x2c, 0xa0, 0x2c),
        classic: true,
    },
    Scheme {
        key: "copa",
        name: "Copa",
        colour: RGBColor(0x94, 0x67, 0xbd),
        classic: true,
    },
    Scheme {
        key: "vegas",
        name: "Vegas",
        colour: RGBColor(0x8c, 0x56, 0x4b),
        classic: true,
    },
    Scheme {
        key: "vivace",
        name: "Vivace",
        colour: RGBColor(0xe3, 0x77, 0xc2),
        classic: true,
    },
    Scheme {
        key: "bbr3",
        name: "BBRv3",
        colour: RGBColor(0x98, 0xdf, 0x8a),
        classic: true,
    },
    Scheme {
        key: "leocc",
        name: "LeoCC",
        colour: RGBColor(0x17, 0x5e, 0x2a),
        classic: true,
    },
    Scheme {
        key: "satcp",
        name: "SaTCP",
        colour: RGBColor(0xff, 0xbb, 0x78),
        classic: true,
    },
    Scheme {
        key: "allegro",
        name: "Allegro",
        colour: RGBColor(0xf7, 0xb6, 0xd2),
        classic: true,
    },
    Scheme {
        key: "proteus",
        name: "Proteus",
        colour: RGBColor(0xc5, 0xb0, 0xd5),
        classic: true,
    },
    Scheme {
        key: "proteus_s",
        name: "Proteus-S",
        colour: RGBColor(0xc4, 0x9c, 0x94),
        classic: true,
    },
    Scheme {
        key: "const",
        name: "constant rate",
        colour: RGBColor(0x7f, 0x7f, 0x7f),
        classic: true,
    },
];

/// Colours for policies of no known scheme, in order of appearance in a figure.
const EXTRA_COLOURS: [RGBColor; 4] = [
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x33, 0x33, 0x33),
    RGBColor(0xdb, 0xdb, 0x8d),
];

/// Grey for reference lines (link capacity, base RTT, equal share).
pub const REFERENCE: RGBColor = RGBColor(0x40, 0x40, 0x40);

/// At most this many lines share a panel; figures with more use small multiples.
pub const MAX_LINES_PER_PANEL: usize = 7;

/// The last component of a policy path (`checkpoints/mocc-omega36` -> `mocc-omega36`).
fn policy_stem(policy: &str) -> &str {
    let p = policy.trim_end_matches('/');
    p.rsplit('/').next().unwrap_or(p)
}

/// The scheme of a policy name: a baseline name (`cubic`, `const:300`), or a checkpoint or export
/// path whose last component (else the whole path) names `mocc` or `aurora`.
pub fn scheme_of(policy: &str) -> Option<&'static Scheme> {
    let stem = policy_stem(policy).to_ascii_lowercase().replace('-', "_");
    let find = |key: &str| SCHEMES.iter().find(|s| s.key == key);
    if stem.starts_with("const:") {
        return find("const");
    }
    if let Some(s) = find(&stem) {
        return Some(s);
    }
    let whole = policy.to_ascii_lowercase();
    ["mocc", "aurora"]
        .into_iter()
        .find(|k| stem.contains(k))
        .or_else(|| ["mocc", "aurora"].into_iter().find(|k| whole.contains(k)))
        .and_then(find)
}

/// The legend name of a policy: its scheme's name, with the file name when that says more
/// (`MOCC (mocc-omega36)`, `Aurora`, `BBR`, `constant 300 pkt/s`).
pub fn display_name(policy: &str) -> String {
    let stem = policy_stem(policy);
    match scheme_of(policy) {
        Some(s) if s.key == "const" => match stem.split_once(':') {
            Some((_, rate)) => format!("constant {rate} pkt/s"),
            None => s.name.to_string(),
        },
        Some(s) if stem.eq_ignore_ascii_case(s.key) => s.name.to_string(),
        Some(s) => format!("{} ({stem})", s.name),
        None => stem.to_string(),
    }
}

/// Whether a policy is a classic controller (for the learned / classic small multiples).
pub fn is_classic(policy: &str) -> bool {
    scheme_of(policy).is_some_and(|s| s.classic)
}

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    /// Continuous.
    Solid,
    /// Long dashes.
    Dashed,
    /// Short dashes.
    Dotted,
}

/// The look of one line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineStyle {
    /// Colour.
    pub colour: RGBColor,
    /// Opacity (1 = opaque).
    pub opacity: f64,
    /// Stroke.
    pub dash: Dash,
    /// Width in pixels.
    pub width: u32,
}

impl LineStyle {
    /// A solid, opaque line of width 2.
    pub fn solid(colour: RGBColor) -> Self {
        Self {
            colour,
            opacity: 1.0,
            dash: Dash::Solid,
            width: 2,
        }
    }

    /// The same line with another stroke.
    pub fn with_dash(self, dash: Dash) -> Self {
        Self { dash, ..self }
    }

    /// The same line with another width.
    pub fn with_width(self, width: u32) -> Self {
        Self { width, ..self }
    }

    /// The same line with another opacity.
    pub fn with_opacity(self, opacity: f64) -> Self {
        Self { opacity, ..self }
    }

    pub(crate) fn shape(&self) -> ShapeStyle {
        self.colour.mix(self.opacity).stroke_width(self.width)
    }
}

/// The colour of a policy: its scheme's, or `None` for a policy of no known scheme.
pub fn scheme_colour(policy: &str) -> Option<RGBColor> {
    scheme_of(policy).map(|s| s.colour)
}

/// Styles for the lines of a figure, one per entry of `policies` (a policy may repeat, e.g.
/// once per objective). Each line takes its scheme's colour; lines of one colour after the
/// first are dashed, then dotted; policies of no known scheme take extra colours in order.
pub fn policy_styles(policies: &[&str]) -> Vec<LineStyle> {
    let mut unknown: Vec<&str> = Vec::new();
    let mut used: Vec<RGBColor> = Vec::new();
    policies
        .iter()
        .map(|p| {
            let colour = scheme_colour(p).unwrap_or_else(|| {
                let i = unknown.iter().position(|u| u == p).unwrap_or_else(|| {
                    unknown.push(p);
                    unknown.len() - 1
                });
                EXTRA_COLOURS[i % EXTRA_COLOURS.len()]
            });
            let same = used.iter().filter(|&&c| c == colour).count();
            used.push(colour);
            let dash = [Dash::Solid, Dash::Dashed, Dash::Dotted][same % 3];
            LineStyle::solid(colour).with_dash(dash)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_known_scheme_has_its_own_stable_colour() {
        // Pinned: the same scheme must look the same in every figure and every version.
        let expect = [
            ("checkpoints/mocc-omega36", (0xd6, 0x27, 0x28)),
            ("exports/mocc36", (0xd6, 0x27, 0x28)),
            ("checkpoints/aurora", (0x1f, 0x77, 0xb4)),
            ("runs/aurora/", (0x1f, 0x77, 0xb4)),
            ("cubic", (0xff, 0x7f, 0x0e)),
            ("bbr", (0x2c, 0xa0, 0x2c)),
            ("copa", (0x94, 0x67, 0xbd)),
            ("vegas", (0x8c, 0x56, 0x4b)),
            ("vivace", (0xe3, 0x77, 0xc2)),
            ("bbr3", (0x98, 0xdf, 0x8a)),
            ("leocc", (0x17, 0x5e, 0x2a)),
            ("satcp", (0xff, 0xbb, 0x78)),
            ("allegro", (0xf7, 0xb6, 0xd2)),
            ("proteus", (0xc5, 0xb0, 0xd5)),
            ("proteus-s", (0xc4, 0x9c, 0x94)),
            ("const:300", (0x7f, 0x7f, 0x7f)),
        ];
        for (policy, (r, g, b)) in expect {
            assert_eq!(scheme_colour(policy), Some(RGBColor(r, g, b)), "{policy}");
        }
        for (i, a) in SCHEMES.iter().enumerate() {
            for b in &SCHEMES[i + 1..] {
                assert_ne!(a.colour, b.colour, "{} and {}", a.key, b.key);
            }
            assert!(!EXTRA_COLOURS.contains(&a.colour), "{}", a.key);
            assert!(!EXTRA_COLOURS.contains(&REFERENCE), "reference grey");
        }
        assert_eq!(scheme_colour("runs/adapt-a"), None);
        assert_eq!(display_name("checkpoints/aurora"), "Aurora");
        assert_eq!(
            display_name("checkpoints/mocc-omega36"),
            "MOCC (mocc-omega36)"
        );
        assert_eq!(display_name("bbr"), "BBR");
        assert_eq!(display_name("proteus_s"), "Proteus-S");
        assert!(is_classic("bbr3") && is_classic("satcp"));
        assert_eq!(display_name("const:300"), "constant 300 pkt/s");
        assert!(is_classic("vivace") && !is_classic("checkpoints/aurora"));
    }

    #[test]
    fn styles_keep_scheme_colours_and_tell_repeats_apart() {
        let s = policy_styles(&[
            "checkpoints/mocc-omega36",
            "cubic",
            "exports/mocc36",
            "x",
            "y",
            "x",
        ]);
        assert_eq!(s[0].colour, SCHEMES[0].colour);
        assert_eq!(s[1].colour, SCHEMES[2].colour);
        // A second MOCC line keeps the MOCC colour, dashed.
        assert_eq!((s[2].colour, s[2].dash), (SCHEMES[0].colour, Dash::Dashed));
        assert_eq!(s[0].dash, Dash::Solid);
        // Unknown policies take extra colours; the same one keeps its colour.
        assert_eq!(s[3].colour, EXTRA_COLOURS[0]);
        assert_eq!(s[4].colour, EXTRA_COLOURS[1]);
        assert_eq!(s[5].colour, EXTRA_COLOURS[0]);
        // The order of the other lines does not change a scheme's colour.
        let t = policy_styles(&["vegas", "bbr", "checkpoints/mocc-omega36"]);
        assert_eq!(t[2].colour, s[0].colour);
        assert_eq!(t[1].colour, SCHEMES[3].colour);
    }
}
