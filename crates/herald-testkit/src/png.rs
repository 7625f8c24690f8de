//! A PNG decoder for tests that check a screenshot's pixels: 8-bit RGB and
//! RGBA, not interlaced (what browsers write). Panics are not used; a file
//! it cannot read is an error naming why.

use std::io::Read;

/// A decoded image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Png {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixels row by row, four bytes (RGBA) each.
    pub rgba: Vec<u8>,
}

impl Png {
    /// The `(r, g, b, a)` of the pixel at `x`, `y`.
    pub fn pixel(&self, x: u32, y: u32) -> Option<(u8, u8, u8, u8)> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 4;
        Some((
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ))
    }
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let (a, b, c) = (i16::from(a), i16::from(b), i16::from(c));
    let p = a + b - c;
    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
    let out = if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    };
    u8::try_from(out).unwrap_or(0)
}

/// Decodes the PNG file `bytes`.
pub fn decode(bytes: &[u8]) -> Result<Png, String> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    let mut rest = bytes
        .strip_prefix(SIGNATURE)
        .ok_or("not a PNG (no signature)")?;
    let (mut width, mut height, mut channels) = (0u32, 0u32, 0usize);
    let mut data = Vec::new();
    while rest.len() >= 12 {
        let len = be32(rest) as usize;
        let kind = &rest[4..8];
        let body = rest.get(8..8 + len).ok_or("a chunk runs past the end")?;
        match kind {
            b"IHDR" => {
                width = be32(&body[0..4]);
                height = be32(&body[4..8]);
                let (depth, color, interlace) = (body[8], body[9], body[12]);
                if depth != 8 || interlace != 0 {
                    return Err(format!(
                        "unsupported bit depth {depth} or interlace {interlace}"
                    ));
                }
                channels = match color {
                    2 => 3,
                    6 => 4,
                    other => return Err(format!("unsupported color type {other}")),
                };
            }
            b"IDAT" => data.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        rest = &rest[12 + len..];
    }
    if channels == 0 {
        return Err("no IHDR chunk".into());
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(data.as_slice())
        .read_to_end(&mut raw)
        .map_err(|e| format!("bad image data: {e}"))?;
    let stride = width as usize * channels;
    if raw.len() < (stride + 1) * height as usize {
        return Err("image data too short".into());
    }
    let mut prev = vec![0u8; stride];
    let mut rgba = Vec::with_capacity(width as usize * height as usize * 4);
    for row in 0..height as usize {
        let line = &raw[row * (stride + 1)..(row + 1) * (stride + 1)];
        let (filter, line) = (line[0], &line[1..]);
        let mut cur = vec![0u8; stride];
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 };
            let b = prev[i];
            let c = if i >= channels { prev[i - channels] } else { 0 };
            let predictor = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => u8::try_from((u16::from(a) + u16::from(b)) / 2).unwrap_or(0),
                4 => paeth(a, b, c),
                other => return Err(format!("unknown filter {other}")),
            };
            cur[i] = line[i].wrapping_add(predictor);
        }
        for px in cur.chunks(channels) {
            rgba.extend_from_slice(&px[..3]);
            rgba.push(if channels == 4 { px[3] } else { 255 });
        }
        prev = cur;
    }
    Ok(Png {
        width,
        height,
        rgba,
    })
}
