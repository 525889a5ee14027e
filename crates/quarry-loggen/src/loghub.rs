//! System events from Loghub's templates.
//!
//! `data/<system>.json` (made once by `data/extract_loghub.py` from Loghub's 2k samples, see
//! `README.md` for the license) lists each template with how often it occurs in the 2k sample,
//! its level counts, and per `<*>` slot the most frequent values seen there with the slot's
//! distinct and total counts. The files are compiled in, so the binary reads nothing at run
//! time.
//!
//! A message is a template drawn by its sample frequency with each slot filled by a value
//! drawn by its sample frequency, or, with probability `0.9 * distinct / occurrences` (high
//! for id-like slots, zero for slots that repeat a few words), a fresh value of the same shape,
//! so that block ids, ports, pids and addresses keep growing with the event count as in real
//! logs while fixed words stay fixed.

use crate::error::LoggenError;
use crate::random::{Random, WeightedTable};
use crate::Level;
use serde::Deserialize;

/// One Loghub system: its service name, its data file and its share of system events (the
/// weights add up to 100; HDFS, Spark and Hadoop dominate as they would on a data platform).
const SYSTEMS: [(&str, &str, f64); 11] = [
    ("android", include_str!("../data/android.json"), 8.0),
    ("bgl", include_str!("../data/bgl.json"), 8.0),
    ("hadoop", include_str!("../data/hadoop.json"), 10.0),
    ("hdfs", include_str!("../data/hdfs.json"), 16.0),
    ("hpc", include_str!("../data/hpc.json"), 6.0),
    ("linux", include_str!("../data/linux.json"), 8.0),
    ("openssh", include_str!("../data/openssh.json"), 8.0),
    ("spark", include_str!("../data/spark.json"), 12.0),
    (
        "thunderbird",
        include_str!("../data/thunderbird.json"),
        10.0,
    ),
    ("windows", include_str!("../data/windows.json"), 6.0),
    ("zookeeper", include_str!("../data/zookeeper.json"), 8.0),
];

/// Service names of the Loghub systems, in the order of `Systems::service`.
pub fn loghub_services() -> impl Iterator<Item = &'static str> {
    SYSTEMS.iter().map(|(service, _, _)| *service)
}

/// The templates of a Loghub system as `(template, count in the 2k sample)`, `<*>` marking
/// each variable part.
pub fn loghub_templates(service: &str) -> Result<Vec<(String, u32)>, LoggenError> {
    let Some((service, json, _)) = SYSTEMS.iter().find(|(name, _, _)| *name == service) else {
        return Ok(Vec::new());
    };
    let file = parse_file(service, json)?;
    Ok(file
        .templates
        .into_iter()
        .map(|template| (template.template, template.count))
        .collect())
}

#[derive(Deserialize)]
struct DataFile {
    templates: Vec<TemplateData>,
}

#[derive(Deserialize)]
struct TemplateData {
    count: u32,
    levels: Vec<(String, u32)>,
    template: String,
    slots: Vec<SlotData>,
}

#[derive(Deserialize)]
struct SlotData {
    distinct: u32,
    occurrences: u32,
    values: Vec<(String, u32)>,
}

fn parse_file(service: &'static str, json: &str) -> Result<DataFile, LoggenError> {
    serde_json::from_str(json).map_err(|source| LoggenError::EmbeddedJson {
        system: service,
        source,
    })
}

/// How a fresh value of a slot is made.
#[derive(Debug)]
enum FreshKind {
    /// Every sample is a dotted quad: keep a sample's first two octets, draw the last two.
    Ipv4,
    /// Every sample is a plain integer and they differ: uniform between the smallest and the
    /// largest sample.
    Integer { min: i64, max: i64 },
    /// Anything else: a sample with its last (at most six) decimal digits redrawn; a sample
    /// without digits is used as it is.
    Digits,
}

/// Decimal digits redrawn at the end of a `FreshKind::Digits` value.
const REDRAWN_DIGITS: usize = 6;

#[derive(Debug)]
struct Slot {
    values: Vec<String>,
    table: WeightedTable,
    fresh_probability: f64,
    fresh: FreshKind,
}

#[derive(Debug)]
struct Template {
    /// The literal text around the slots: one more part than slots.
    parts: Vec<String>,
    slots: Vec<Slot>,
    levels: Vec<Level>,
    level_table: WeightedTable,
}

#[derive(Debug)]
struct System {
    service: &'static str,
    templates: Vec<Template>,
    template_table: WeightedTable,
}

/// All eleven systems, ready to draw messages from.
#[derive(Debug)]
pub(crate) struct Systems {
    systems: Vec<System>,
    system_table: WeightedTable,
}

impl Systems {
    pub fn load() -> Result<Self, LoggenError> {
        let systems = SYSTEMS
            .iter()
            .map(|&(service, json, _)| load_system(service, json))
            .collect::<Result<Vec<_>, _>>()?;
        let system_table = WeightedTable::new(SYSTEMS.iter().map(|&(_, _, weight)| weight));
        Ok(Self {
            systems,
            system_table,
        })
    }

    pub fn service(&self, system: usize) -> &'static str {
        self.systems[system].service
    }

    pub fn draw_system(&self, random: &mut Random) -> usize {
        self.system_table.sample(random)
    }

    /// Appends a message of `system` to `message` and returns its level.
    pub fn draw_message(&self, system: usize, random: &mut Random, message: &mut String) -> Level {
        let system = &self.systems[system];
        let template = &system.templates[system.template_table.sample(random)];
        let level = template.levels[template.level_table.sample(random)];
        message.push_str(&template.parts[0]);
        for (slot, part) in template.slots.iter().zip(&template.parts[1..]) {
            slot.draw(random, message);
            message.push_str(part);
        }
        level
    }
}

impl Slot {
    fn draw(&self, random: &mut Random, out: &mut String) {
        let fresh = self.fresh_probability > 0.0 && random.chance(self.fresh_probability);
        let sample = &self.values[self.table.sample(random)];
        if !fresh {
            out.push_str(sample);
            return;
        }
        match self.fresh {
            FreshKind::Ipv4 => {
                let mut octets = sample.splitn(3, '.');
                for _ in 0..2 {
                    out.push_str(octets.next().unwrap_or("10"));
                    out.push('.');
                }
                let mut buffer = itoa::Buffer::new();
                out.push_str(buffer.format(1 + random.below(254)));
                out.push('.');
                out.push_str(buffer.format(1 + random.below(254)));
            }
            FreshKind::Integer { min, max } => {
                out.push_str(itoa::Buffer::new().format(random.between(min, max)));
            }
            FreshKind::Digits => {
                let start = out.len();
                out.push_str(sample);
                let positions: Vec<usize> = out[start..]
                    .bytes()
                    .enumerate()
                    .rev()
                    .filter(|(_, byte)| byte.is_ascii_digit())
                    .take(REDRAWN_DIGITS)
                    .map(|(position, _)| start + position)
                    .collect();
                for position in positions {
                    let digit = char::from(b'0' + random.below(10) as u8);
                    // An ASCII digit is one byte, so the range is a char boundary.
                    out.replace_range(position..position + 1, digit.encode_utf8(&mut [0; 1]));
                }
            }
        }
    }
}

fn load_system(service: &'static str, json: &str) -> Result<System, LoggenError> {
    let file = parse_file(service, json)?;
    if file.templates.is_empty() {
        return Err(LoggenError::EmbeddedTemplate {
            system: service,
            template: String::new(),
            reason: "no templates",
        });
    }
    let template_table =
        WeightedTable::new(file.templates.iter().map(|t| f64::from(t.count.max(1))));
    let templates = file
        .templates
        .into_iter()
        .map(|template| load_template(service, template))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(System {
        service,
        templates,
        template_table,
    })
}

fn load_template(service: &'static str, data: TemplateData) -> Result<Template, LoggenError> {
    let parts: Vec<String> = data.template.split("<*>").map(str::to_owned).collect();
    let bad = |reason: &'static str| LoggenError::EmbeddedTemplate {
        system: service,
        template: data.template.clone(),
        reason,
    };
    if data.slots.len() + 1 != parts.len() {
        return Err(bad("slot values do not match the number of `<*>`"));
    }
    let mut levels = Vec::with_capacity(data.levels.len());
    let mut level_weights = Vec::with_capacity(data.levels.len());
    for (name, count) in &data.levels {
        let level = Level::parse(name).ok_or_else(|| bad("unknown level"))?;
        levels.push(level);
        level_weights.push(f64::from(*count));
    }
    if levels.is_empty() {
        levels.push(Level::Info);
        level_weights.push(1.0);
    }
    let slots = data
        .slots
        .into_iter()
        .map(|slot| {
            if slot.values.is_empty() {
                return Err(bad("a slot without values"));
            }
            Ok(load_slot(slot))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Template {
        parts,
        slots,
        levels,
        level_table: WeightedTable::new(level_weights),
    })
}

fn load_slot(data: SlotData) -> Slot {
    let values: Vec<String> = data.values.iter().map(|(value, _)| value.clone()).collect();
    let table = WeightedTable::new(data.values.iter().map(|(_, count)| f64::from(*count)));
    let has_digits = values
        .iter()
        .any(|value| value.bytes().any(|b| b.is_ascii_digit()));
    let fresh_probability = if has_digits {
        0.9 * f64::from(data.distinct) / f64::from(data.occurrences.max(1))
    } else {
        0.0
    };
    let integers: Option<Vec<i64>> = values.iter().map(|value| parse_integer(value)).collect();
    let fresh = if values.iter().all(|value| is_ipv4(value)) {
        FreshKind::Ipv4
    } else {
        match integers {
            Some(integers) if integers.iter().min() != integers.iter().max() => {
                FreshKind::Integer {
                    // unwrap: `values` is not empty, checked by the caller.
                    min: *integers.iter().min().unwrap(),
                    max: *integers.iter().max().unwrap(),
                }
            }
            _ => FreshKind::Digits,
        }
    };
    Slot {
        values,
        table,
        fresh_probability,
        fresh,
    }
}

/// A plain decimal integer as a log prints it: optional `-`, no leading zeros, fits i64.
fn parse_integer(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    value.parse().ok()
}

fn is_ipv4(value: &str) -> bool {
    let mut octets = 0;
    for octet in value.split('.') {
        octets += 1;
        if octet.is_empty() || octet.len() > 3 || octet.parse::<u8>().is_err() {
            return false;
        }
    }
    octets == 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::stream;

    #[test]
    fn every_system_loads() {
        let systems = Systems::load().unwrap();
        assert_eq!(loghub_services().count(), 11);
        for (system, service) in loghub_services().enumerate() {
            assert_eq!(systems.service(system), service);
            assert!(!loghub_templates(service).unwrap().is_empty());
        }
    }

    #[test]
    fn shapes() {
        for (value, integer) in [
            ("0", Some(0)),
            ("-42", Some(-42)),
            ("007", None),
            ("-", None),
            ("12a", None),
            ("-7724713468912166542", Some(-7724713468912166542)),
            ("99999999999999999999", None),
        ] {
            assert_eq!(parse_integer(value), integer, "{value}");
        }
        for (value, ipv4) in [
            ("10.250.19.102", true),
            ("10.250.19", false),
            ("10.250.19.256", false),
            ("a.b.c.d", false),
        ] {
            assert_eq!(is_ipv4(value), ipv4, "{value}");
        }
    }

    #[test]
    fn fresh_values_keep_their_shape() {
        let slot = |values: &[&str]| {
            load_slot(SlotData {
                distinct: values.len() as u32,
                occurrences: values.len() as u32,
                values: values.iter().map(|v| (v.to_string(), 1)).collect(),
            })
        };
        let mut random = Random::new(5, stream::EVENTS);
        let draw = |slot: &Slot, random: &mut Random| {
            let mut out = String::new();
            slot.draw(random, &mut out);
            out
        };
        let ips = slot(&["10.250.19.102", "10.251.7.3"]);
        let ports = slot(&["50010", "54106", "40001"]);
        let ids = slot(&["attempt_1445144423722_0020_m_000001_0"]);
        let words = slot(&["root", "admin"]);
        let mut distinct_ids = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let ip = draw(&ips, &mut random);
            assert!(is_ipv4(&ip) && ip.starts_with("10.25"), "{ip}");
            let port: i64 = draw(&ports, &mut random).parse().unwrap();
            assert!((40001..=54106).contains(&port), "{port}");
            let id = draw(&ids, &mut random);
            assert!(
                id.starts_with("attempt_1445144423722_00") && id.len() == 37,
                "{id}"
            );
            distinct_ids.insert(id);
            let word = draw(&words, &mut random);
            assert!(word == "root" || word == "admin");
        }
        assert!(
            distinct_ids.len() > 100,
            "fresh ids should grow the vocabulary"
        );
    }
}
