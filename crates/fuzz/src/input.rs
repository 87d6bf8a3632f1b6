//! Seeded inputs and the generators the targets share: text, packet
//! sequences and trace timestamps.

use arbitrary::{Result, Unstructured};
use linkem::model::{Nanos, MILLI};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The raw bytes of the input with this seed. Lengths spread over orders
/// of magnitude (up to 32 KiB): short inputs reach the early exits, long
/// ones long packet sequences and many edits.
pub fn seeded_bytes(seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let exponent = rng.random_range(4..=15);
    let len = rng.random_range(0..=1usize << exponent);
    let mut bytes = vec![0; len];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// One of `items`.
pub fn pick<T: Copy>(u: &mut Unstructured, items: &[T]) -> Result<T> {
    u.choose(items).copied()
}

/// A short run of characters, mostly printable ASCII, sometimes anything.
pub fn token(u: &mut Unstructured) -> Result<String> {
    let len = u.int_in_range(0..=12)?;
    let mut text = String::new();
    for _ in 0..len {
        let c = match u.ratio(9, 10)? {
            true => char::from(u.int_in_range(0x20u8..=0x7e)?),
            false => u.arbitrary::<char>()?,
        };
        text.push(c);
    }
    Ok(text)
}

/// Text of dictionary words, stray tokens and separators: random bytes
/// rarely get past a parser's first character, this does.
pub fn soup(u: &mut Unstructured, words: &[&str]) -> Result<String> {
    let count = u.int_in_range(0..=40)?;
    let mut text = String::new();
    for _ in 0..count {
        match u.int_in_range(0..=9)? {
            0..=5 => text.push_str(pick(u, words)?),
            6 => text.push_str(&token(u)?),
            7 => text.push('\n'),
            8 => text.push_str(pick(u, &[" = ", "\"", "[", "]", ",", "=", "#", "'"])?),
            _ => text.push(' '),
        }
    }
    Ok(text)
}

/// `text` after a few line-level and character-level edits, new material
/// coming from `words` (whole lines or values) and stray tokens.
pub fn mutate(text: &str, u: &mut Unstructured, words: &[&str]) -> Result<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..u.int_in_range(1..=4)? {
        edit(&mut lines, u, words)?;
    }
    Ok(lines.join("\n"))
}

fn edit(lines: &mut Vec<String>, u: &mut Unstructured, words: &[&str]) -> Result<()> {
    if lines.is_empty() {
        lines.push(pick(u, words)?.to_string());
        return Ok(());
    }
    let at = u.choose_index(lines.len())?;
    match u.int_in_range(0..=6)? {
        0 => {
            lines.remove(at);
        }
        1 => lines.insert(at, lines[at].clone()),
        2 => {
            let other = u.choose_index(lines.len())?;
            lines.swap(at, other);
        }
        3 => {
            let key = lines[at].split('=').next().unwrap_or("").to_string();
            let value = match u.ratio(3, 4)? {
                true => pick(u, words)?.to_string(),
                false => token(u)?,
            };
            lines[at] = format!("{key}= {value}");
        }
        4 => lines.insert(at, pick(u, words)?.to_string()),
        5 => {
            let cut = char_boundary(&lines[at], u)?;
            lines[at].insert_str(cut, &token(u)?);
        }
        _ => {
            let cut = char_boundary(&lines[at], u)?;
            lines[at].truncate(cut);
        }
    }
    Ok(())
}

fn char_boundary(line: &str, u: &mut Unstructured) -> Result<usize> {
    let boundaries: Vec<usize> = line
        .char_indices()
        .map(|(i, _)| i)
        .chain([line.len()])
        .collect();
    pick(u, &boundaries)
}

/// `text` as a TOML basic string: JSON's escapes are TOML's, and DEL,
/// which JSON leaves alone, TOML wants escaped.
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text)
        .expect("a string always serializes")
        .replace('\u{7f}', "\\u007F")
}

/// One packet offered to the link.
#[derive(Debug, Clone, Copy)]
pub struct Packet {
    /// Client to server rather than server to client.
    pub upstream: bool,
    /// Its size in bytes.
    pub len: u32,
    /// Time since the previous packet's arrival.
    pub gap: Nanos,
}

/// Longest packet sequence one input offers.
const MAX_PACKETS: usize = 2000;

/// Packets of every size, at gaps from none (a burst) to seconds.
pub fn arbitrary_packets(u: &mut Unstructured) -> Result<Vec<Packet>> {
    let mut packets = Vec::new();
    while packets.len() < MAX_PACKETS && !u.is_empty() {
        let len = match u.int_in_range(0..=3)? {
            0 => u.int_in_range(40..=100)?,
            1 => u.int_in_range(1200..=1500)?,
            2 => 1500,
            _ => u.int_in_range(0..=65_535)?,
        };
        let gap = match u.int_in_range(0..=5)? {
            0 | 1 => 0,
            2 => u.int_in_range(0..=100_000)?,
            3 | 4 => u.int_in_range(0..=20 * MILLI)?,
            _ => u.int_in_range(0..=2_000 * MILLI)?,
        };
        packets.push(Packet {
            upstream: u.arbitrary()?,
            len,
            gap,
        });
    }
    Ok(packets)
}

/// Non-decreasing timestamps ending above 0: a valid trace's content.
pub fn arbitrary_timestamps(u: &mut Unstructured) -> Result<Vec<u64>> {
    let count = u.int_in_range(1..=64)?;
    let mut now = 0u64;
    let mut timestamps = Vec::with_capacity(count);
    for _ in 0..count {
        let gap = match u.int_in_range(0..=20)? {
            0..=9 => 0,
            10..=18 => u.int_in_range(1..=20)?,
            19 => u.int_in_range(1..=100_000)?,
            _ => u.arbitrary::<u64>()?,
        };
        now = now.saturating_add(gap);
        timestamps.push(now);
    }
    if now == 0 {
        timestamps.push(1);
    }
    Ok(timestamps)
}

/// The timestamps as a trace file, with the blank lines and spacing a
/// hand-edited file has.
pub fn render(timestamps: &[u64], u: &mut Unstructured) -> Result<String> {
    let mut text = String::new();
    for ms in timestamps {
        let before = pick(u, &["", "", "", " ", "\t", "\n"])?;
        let after = pick(u, &["\n", "\n", "\n", " \n", "\r\n", "\n\n"])?;
        text.push_str(&format!("{before}{ms}{after}"));
    }
    Ok(text)
}
