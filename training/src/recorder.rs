//! Where scalars go: TensorBoard event files and a CSV, behind one trait.
//!
//! The TensorBoard writer is our own (a dozen lines of protobuf): records are
//! `len (u64 LE) | masked crc32c(len) | Event bytes | masked crc32c(bytes)`, the first event
//! carrying `file_version = "brain.Event:2"`, then one `Summary.Value{tag, simple_value}` per
//! scalar. A failing write is reported to the caller, which warns and keeps training.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// A sink for scalar metrics.
pub trait Recorder {
    /// Records `value` under `tag` at `step` (env steps).
    fn scalar(&mut self, tag: &str, step: u64, value: f64) -> std::io::Result<()>;
    /// Flushes buffered records.
    fn flush(&mut self) -> std::io::Result<()>;
}

fn wall_time() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// `metrics.csv`: one `wall_time,step,tag,value` row per scalar (long format).
pub struct CsvRecorder {
    out: BufWriter<File>,
}

/// The CSV log's file name in a run folder.
pub const METRICS_CSV: &str = "metrics.csv";

/// Rewrites the CSV log at `path` without its rows logged after `step` (env steps), and
/// without a torn last line from a killed writer, so a resumed run does not log the repeated
/// updates twice; returns how many rows were dropped. A missing file is left missing. The new
/// file replaces the old one atomically.
pub fn truncate_csv_after(path: &Path, step: u64) -> std::io::Result<usize> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut kept = String::with_capacity(text.len());
    let mut dropped = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let complete = line.ends_with('\n');
        let row_step = line.split(',').nth(1).and_then(|s| s.parse::<u64>().ok());
        let keep = complete && (i == 0 || row_step.is_some_and(|s| s <= step));
        if keep {
            kept.push_str(line);
        } else {
            dropped += 1;
        }
    }
    if dropped == 0 {
        return Ok(0);
    }
    mocc_outputs::write_file_atomic(path, kept.as_bytes()).map_err(|e| e.source)?;
    Ok(dropped)
}

impl CsvRecorder {
    /// Creates `path`, or appends to it when it exists (a resumed run).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let exists = path.exists();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let mut out = BufWriter::new(file);
        if !exists {
            writeln!(out, "wall_time,step,tag,value")?;
        }
        Ok(Self { out })
    }
}

impl Recorder for CsvRecorder {
    fn scalar(&mut self, tag: &str, step: u64, value: f64) -> std::io::Result<()> {
        writeln!(self.out, "{:.3},{step},{tag},{value}", wall_time())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A TensorBoard event file writer.
pub struct TensorBoardRecorder {
    out: BufWriter<File>,
    path: PathBuf,
}

impl TensorBoardRecorder {
    /// Creates `dir/events.out.tfevents.<time>.mocc` with its version record.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let now = wall_time();
        let path = dir.join(format!(
            "events.out.tfevents.{}.{}.mocc",
            now as u64,
            std::process::id()
        ));
        let mut w = Self {
            out: BufWriter::new(File::create(&path)?),
            path,
        };
        let mut event = Vec::new();
        put_double(&mut event, 1, now);
        put_bytes(&mut event, 3, b"brain.Event:2");
        w.write_record(&event)?;
        w.out.flush()?;
        Ok(w)
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_record(&mut self, data: &[u8]) -> std::io::Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        self.out.write_all(&len)?;
        self.out.write_all(&masked_crc32c(&len).to_le_bytes())?;
        self.out.write_all(data)?;
        self.out.write_all(&masked_crc32c(data).to_le_bytes())
    }
}

impl Recorder for TensorBoardRecorder {
    fn scalar(&mut self, tag: &str, step: u64, value: f64) -> std::io::Result<()> {
        let mut v = Vec::new();
        put_bytes(&mut v, 1, tag.as_bytes());
        put_float(&mut v, 2, value as f32);
        let mut summary = Vec::new();
        put_bytes(&mut summary, 1, &v);
        let mut event = Vec::new();
        put_double(&mut event, 1, wall_time());
        put_varint_field(&mut event, 2, step);
        put_bytes(&mut event, 5, &summary);
        self.write_record(&event)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint_field(out: &mut Vec<u8>, field: u32, v: u64) {
    put_varint(out, u64::from(field) << 3);
    put_varint(out, v);
}

fn put_double(out: &mut Vec<u8>, field: u32, v: f64) {
    put_varint(out, (u64::from(field) << 3) | 1);
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_float(out: &mut Vec<u8>, field: u32, v: f32) {
    put_varint(out, (u64::from(field) << 3) | 5);
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(field) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// CRC-32C (Castagnoli), bitwise.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0x82F6_3B78 & mask);
        }
    }
    !crc
}

/// TFRecord's masked CRC.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c(data);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// Fans scalars out to several recorders, remembering the first error of each write.
#[derive(Default)]
pub struct Recorders {
    sinks: Vec<Box<dyn Recorder>>,
}

impl Recorders {
    /// Adds a sink.
    pub fn push(&mut self, r: Box<dyn Recorder>) {
        self.sinks.push(r);
    }

    /// Records to every sink; returns the errors (the caller warns and goes on).
    pub fn scalar(&mut self, tag: &str, step: u64, value: f64) -> Vec<std::io::Error> {
        self.sinks
            .iter_mut()
            .filter_map(|s| s.scalar(tag, step, value).err())
            .collect()
    }

    /// Flushes every sink.
    pub fn flush(&mut self) -> Vec<std::io::Error> {
        self.sinks
            .iter_mut()
            .filter_map(|s| s.flush().err())
            .collect()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn truncation_keeps_rows_up_to_the_checkpoint_and_drops_a_torn_line() {
        let path = std::env::temp_dir().join(format!("mocc-trunc-{}.csv", std::process::id()));
        let rows = "wall_time,step,tag,value\n1.0,100,a,1\n1.0,100,b,2\n1.0,200,a,3\n\
                    1.0,300,a,4\n1.0,30";
        std::fs::write(&path, rows).unwrap();
        assert_eq!(truncate_csv_after(&path, 200).unwrap(), 2);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "wall_time,step,tag,value\n1.0,100,a,1\n1.0,100,b,2\n1.0,200,a,3\n"
        );
        assert_eq!(truncate_csv_after(&path, 200).unwrap(), 0);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            truncate_csv_after(&path, 0).unwrap(),
            0,
            "a missing file is fine"
        );
        assert!(!path.exists());
    }

    use super::*;

    #[test]
    fn crc32c_known_vectors() {
        // RFC 3720 test vectors.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
    }

    #[test]
    fn varints_encode_like_protobuf() {
        let mut v = Vec::new();
        put_varint(&mut v, 300);
        assert_eq!(v, vec![0xAC, 0x02]);
    }

    #[test]
    fn event_file_records_are_framed() {
        let dir = std::env::temp_dir().join(format!("mocc-tb-{}", std::process::id()));
        let mut tb = TensorBoardRecorder::create(&dir).unwrap();
        tb.scalar("charts/SPS", 7, 1.5).unwrap();
        tb.flush().unwrap();
        let bytes = std::fs::read(tb.path()).unwrap();
        let mut pos = 0;
        let mut records = 0;
        while pos < bytes.len() {
            let len = u64::from_le_bytes(bytes[pos..pos + 8].try_into().unwrap()) as usize;
            let len_crc = u32::from_le_bytes(bytes[pos + 8..pos + 12].try_into().unwrap());
            assert_eq!(len_crc, masked_crc32c(&bytes[pos..pos + 8]));
            let data = &bytes[pos + 12..pos + 12 + len];
            let crc = u32::from_le_bytes(bytes[pos + 12 + len..pos + 16 + len].try_into().unwrap());
            assert_eq!(crc, masked_crc32c(data));
            pos += 16 + len;
            records += 1;
        }
        assert_eq!(records, 2);
        let _ = std::fs::remove_dir_all(dir);
    }
}
