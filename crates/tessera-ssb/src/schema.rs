//! The SSB schema's fixed domains (O'Neil et al., *Star Schema Benchmark*, rev. 3, after TPC-H's
//! dbgen): regions, nations, cities, the part hierarchy MFGR#m / MFGR#mc / MFGR#mcb, the date
//! range. Every string column is stored as a dictionary code: the index of the string in its
//! dictionary, which is sorted by string order, so a range of strings (`p_brand1 BETWEEN
//! 'MFGR#2221' AND 'MFGR#2228'`) is a range of codes.

/// The five regions, in string order.
pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

/// TPC-H's 25 nations with their region (an index into [`REGIONS`]), in TPC-H's nation-key order.
pub const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

/// First year of the date dimension; it holds [`DATE_DAYS`] days from January 1st of it.
pub const FIRST_YEAR: u32 = 1992;
/// Years of the date dimension (1992-1998).
pub const YEARS: u32 = 7;
/// Days of the date dimension: 1992-01-01 to 1998-12-30, as dbgen makes it.
pub const DATE_DAYS: usize = 2556;
/// Order dates stop this many days before the end of 1998 (TPC-H's ENDDATE - 151).
pub const ORDER_DATE_MARGIN: usize = 151;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The dictionaries of the string columns, each sorted, a code being an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dictionaries {
    pub region: Vec<String>,
    pub nation: Vec<String>,
    pub city: Vec<String>,
    pub mfgr: Vec<String>,
    pub category: Vec<String>,
    pub brand1: Vec<String>,
    pub yearmonth: Vec<String>,
}

/// Names of the dictionaries, as stored in `dict.tsr`.
pub const DICTIONARY_NAMES: [&str; 7] = [
    "region",
    "nation",
    "city",
    "mfgr",
    "category",
    "brand1",
    "yearmonth",
];

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// dbgen's city of a nation: its name's first 9 characters, padded to 9, then a digit.
pub fn city_name(nation: &str, digit: u32) -> String {
    let prefix: String = nation.chars().take(9).collect();
    format!("{prefix:<9}{digit}")
}

/// `Dec1997`: the date dimension's d_yearmonth.
pub fn yearmonth_name(year: u32, month: u32) -> String {
    format!("{}{year}", MONTHS[(month - 1) as usize % 12])
}

impl Dictionaries {
    /// The dictionaries the specification fixes (they do not depend on the scale factor).
    pub fn standard() -> Dictionaries {
        let nation = sorted(NATIONS.iter().map(|(n, _)| n.to_string()).collect());
        let city = sorted(
            NATIONS
                .iter()
                .flat_map(|(n, _)| (0..10).map(move |d| city_name(n, d)))
                .collect(),
        );
        let mfgr = sorted((1..=5).map(|m| format!("MFGR#{m}")).collect());
        let category = sorted(
            (1..=5)
                .flat_map(|m| (1..=5).map(move |c| format!("MFGR#{m}{c}")))
                .collect(),
        );
        let brand1 = sorted(
            (1..=5)
                .flat_map(|m| {
                    (1..=5).flat_map(move |c| (1..=40).map(move |b| format!("MFGR#{m}{c}{b}")))
                })
                .collect(),
        );
        let yearmonth = sorted(
            (FIRST_YEAR..FIRST_YEAR + YEARS)
                .flat_map(|y| (1..=12).map(move |m| yearmonth_name(y, m)))
                .collect(),
        );
        Dictionaries {
            region: REGIONS.iter().map(|s| s.to_string()).collect(),
            nation,
            city,
            mfgr,
            category,
            brand1,
            yearmonth,
        }
    }

    /// The dictionary called `name` (one of [`DICTIONARY_NAMES`]).
    pub fn get(&self, name: &str) -> Option<&[String]> {
        Some(match name {
            "region" => &self.region,
            "nation" => &self.nation,
            "city" => &self.city,
            "mfgr" => &self.mfgr,
            "category" => &self.category,
            "brand1" => &self.brand1,
            "yearmonth" => &self.yearmonth,
            _ => return None,
        })
    }

    /// The code of `s` in dictionary `name`.
    pub fn code(&self, name: &str, s: &str) -> tessera::Result<u32> {
        let d = self.get(name).ok_or_else(|| {
            tessera::Error::InvalidArgument(format!("no dictionary called {name}"))
        })?;
        d.binary_search_by(|x| x.as_str().cmp(s))
            .map(|i| i as u32)
            .map_err(|_| {
                tessera::Error::InvalidArgument(format!("'{s}' is not in the {name} dictionary"))
            })
    }

    /// The codes of the strings of dictionary `name` between `lo` and `hi` (string order,
    /// both included), as an inclusive code range; `None` when none is.
    pub fn code_range(
        &self,
        name: &str,
        lo: &str,
        hi: &str,
    ) -> tessera::Result<Option<(u32, u32)>> {
        let d = self.get(name).ok_or_else(|| {
            tessera::Error::InvalidArgument(format!("no dictionary called {name}"))
        })?;
        let first = d.partition_point(|x| x.as_str() < lo);
        let end = d.partition_point(|x| x.as_str() <= hi);
        Ok((first < end).then(|| (first as u32, end as u32 - 1)))
    }
}

/// One day of the date dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Day {
    pub year: u32,
    pub month: u32,
    pub day: u32,
    /// 1-based day of the year.
    pub day_of_year: u32,
}

impl Day {
    /// d_datekey: yyyymmdd.
    pub fn key(&self) -> u32 {
        self.year * 10_000 + self.month * 100 + self.day
    }
    /// d_weeknuminyear: weeks of 7 days counted from January 1st, from 1.
    pub fn week_in_year(&self) -> u32 {
        (self.day_of_year - 1) / 7 + 1
    }
}

fn leap(y: u32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn month_days(y: u32, m: u32) -> u32 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The [`DATE_DAYS`] days of the date dimension, in order.
pub fn days() -> Vec<Day> {
    let mut out = Vec::with_capacity(DATE_DAYS);
    let (mut y, mut m, mut d, mut doy) = (FIRST_YEAR, 1, 1, 1);
    while out.len() < DATE_DAYS {
        out.push(Day {
            year: y,
            month: m,
            day: d,
            day_of_year: doy,
        });
        d += 1;
        doy += 1;
        if d > month_days(y, m) {
            d = 1;
            m += 1;
            if m > 12 {
                m = 1;
                y += 1;
                doy = 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionaries_have_the_specified_sizes_and_are_sorted() {
        let d = Dictionaries::standard();
        assert_eq!((d.region.len(), d.nation.len(), d.city.len()), (5, 25, 250));
        assert_eq!(
            (
                d.mfgr.len(),
                d.category.len(),
                d.brand1.len(),
                d.yearmonth.len()
            ),
            (5, 25, 1000, 84)
        );
        for name in DICTIONARY_NAMES {
            let v = d.get(name).expect("exists");
            assert!(v.windows(2).all(|w| w[0] < w[1]), "{name}");
        }
        assert!(d.city.contains(&"UNITED KI1".to_string()));
        assert!(d.city.contains(&"PERU     7".to_string()));
        // q2.2's range is brands 21..=28 of MFGR#22.
        let (lo, hi) = d
            .code_range("brand1", "MFGR#2221", "MFGR#2228")
            .expect("dictionary")
            .expect("non-empty");
        let got: Vec<&str> = (lo..=hi).map(|c| d.brand1[c as usize].as_str()).collect();
        let want: Vec<String> = (21..=28).map(|b| format!("MFGR#22{b}")).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_date_dimension_runs_from_1992_to_1998_12_30() {
        let d = days();
        assert_eq!(d.len(), DATE_DAYS);
        assert_eq!(d[0].key(), 19920101);
        assert_eq!(d[DATE_DAYS - 1].key(), 19981230);
        assert_eq!(d[59].key(), 19920229);
        assert_eq!(d[366].key(), 19930101);
        assert_eq!(d[366].week_in_year(), 1);
        assert_eq!(d[365].day_of_year, 366);
    }
}
