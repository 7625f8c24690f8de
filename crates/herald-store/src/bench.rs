//! Synthetic data for benchmarks: realistic, varied, deterministic
//! conversations inserted through the store's own insert path, plus search
//! queries drawn from the same vocabulary.
//!
//! Text comes from a small built-in word list followed by a long tail of
//! generated words, sampled with a Zipf distribution (a few very common
//! words, many rare ones) like real transcripts, with some paths, versions,
//! hyphenated and snake_case identifiers mixed in. No `rand` dependency: a
//! splitmix64 generator seeded per call keeps runs reproducible.

use std::time::{Duration, Instant};

use herald_protocol::{Message, ToolCall};
use rusqlite::TransactionBehavior;

use crate::error::{StoreError, sql};
use crate::messages::insert_messages;
use crate::records::{NewSession, SessionSource};
use crate::sessions::insert_session;
use crate::store::{Store, new_id};

/// Common words of coding conversations, most frequent first.
const COMMON: &[&str] = &[
    "the",
    "to",
    "a",
    "and",
    "of",
    "is",
    "in",
    "it",
    "that",
    "for",
    "this",
    "with",
    "on",
    "be",
    "file",
    "not",
    "we",
    "you",
    "error",
    "can",
    "test",
    "if",
    "function",
    "use",
    "should",
    "from",
    "run",
    "build",
    "code",
    "add",
    "fix",
    "now",
    "are",
    "value",
    "need",
    "check",
    "config",
    "line",
    "return",
    "new",
    "type",
    "let",
    "will",
    "make",
    "so",
    "data",
    "but",
    "string",
    "call",
    "all",
    "server",
    "request",
    "update",
    "output",
    "time",
    "list",
    "set",
    "user",
    "path",
    "command",
    "module",
    "when",
    "struct",
    "result",
    "one",
    "change",
    "read",
    "write",
    "which",
    "there",
    "have",
    "method",
    "failed",
    "tests",
    "version",
    "into",
    "also",
    "see",
    "first",
    "default",
    "option",
    "instead",
    "want",
    "import",
    "install",
    "after",
    "before",
    "message",
    "because",
    "crate",
    "compile",
    "warning",
    "directory",
    "process",
    "response",
    "field",
    "async",
    "thread",
    "memory",
    "cache",
    "index",
    "query",
    "table",
    "database",
    "schema",
    "migration",
    "session",
    "token",
    "model",
    "prompt",
    "agent",
    "tool",
    "search",
    "commit",
    "branch",
    "merge",
    "docker",
    "container",
    "image",
    "deploy",
    "release",
    "client",
    "connection",
    "timeout",
    "retry",
    "logging",
    "parser",
    "json",
    "yaml",
    "toml",
    "script",
    "shell",
    "python",
    "rust",
    "cargo",
    "npm",
    "package",
    "dependency",
    "feature",
    "flag",
    "argument",
    "variable",
    "loop",
    "vector",
    "map",
    "key",
    "hash",
    "lock",
    "mutex",
    "channel",
    "stream",
    "buffer",
    "socket",
    "port",
    "endpoint",
    "header",
    "body",
    "status",
    "panic",
    "trace",
    "debug",
    "benchmark",
    "latency",
    "throughput",
    "profile",
    "optimize",
    "refactor",
    "rename",
    "delete",
    "remove",
    "create",
];

/// Syllables the long tail of generated words is built from.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ter", "pro", "zen", "vax", "dur", "bel", "qui", "sor", "nap", "tic", "ul",
    "gra", "fen", "hob", "jin", "mor", "pex", "rud", "sam", "tov", "wex", "yel", "zor", "ban",
    "cir", "dol", "est", "fra", "gul", "hin", "ix", "jup", "kel", "lum", "nor", "ost", "pim",
];

/// Size of the generated tail (on top of [`COMMON`]).
const TAIL_WORDS: usize = 40_000;

/// Words per transaction batch while generating.
const BATCH_MESSAGES: usize = 20_000;

/// splitmix64: tiny, fast, good enough for synthetic text.
pub struct Rng(u64);

impl Rng {
    /// A generator that always yields the same sequence for the same seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % (n.max(1) as u64)) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The benchmark vocabulary with a Zipf sampler over it.
pub struct Vocabulary {
    words: Vec<String>,
    /// Cumulative Zipf weights, normalised to end at 1.
    cdf: Vec<f64>,
}

impl Default for Vocabulary {
    fn default() -> Self {
        Vocabulary::new()
    }
}

impl Vocabulary {
    /// The common words followed by the generated tail.
    pub fn new() -> Vocabulary {
        let n = SYLLABLES.len();
        let mut words: Vec<String> = COMMON.iter().map(|w| (*w).to_owned()).collect();
        for i in 0..TAIL_WORDS {
            let mut word = String::new();
            word.push_str(SYLLABLES[i % n]);
            word.push_str(SYLLABLES[(i / n) % n]);
            if i >= n * n {
                word.push_str(SYLLABLES[(i / (n * n)) % n]);
            }
            words.push(word);
        }
        let mut total = 0.0;
        let mut cdf: Vec<f64> = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        for c in &mut cdf {
            *c /= total;
        }
        Vocabulary { words, cdf }
    }

    /// The word at a frequency rank (0 = most common).
    pub fn word(&self, rank: usize) -> &str {
        &self.words[rank.min(self.words.len() - 1)]
    }

    /// How many distinct words there are.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Always false; the vocabulary is built in.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// A word drawn with Zipf frequencies.
    pub fn sample(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        let rank = self.cdf.partition_point(|c| *c < u);
        self.word(rank)
    }

    /// A token as it appears in technical text: usually a word, sometimes a
    /// path, version, hyphenated or snake_case identifier.
    fn token(&self, rng: &mut Rng, out: &mut String) {
        let roll = rng.below(100);
        let a = self.sample(rng);
        match roll {
            0 => {
                let b = self.sample(rng);
                out.push_str(&format!("{a}-{b}"));
            }
            1 => {
                let b = self.sample(rng);
                out.push_str(&format!("{a}_{b}"));
            }
            2 => {
                let b = self.sample(rng);
                out.push_str(&format!("src/{a}/{b}.rs"));
            }
            3 => out.push_str(&format!(
                "v{}.{}.{}",
                rng.below(4),
                rng.below(20),
                rng.below(10)
            )),
            _ => out.push_str(a),
        }
    }

    /// A sentence-ish run of `words` tokens.
    pub fn text(&self, rng: &mut Rng, words: usize) -> String {
        let mut out = String::with_capacity(words * 7);
        for i in 0..words {
            if i > 0 {
                out.push(if rng.below(12) == 0 { '\n' } else { ' ' });
            }
            self.token(rng, &mut out);
        }
        out
    }
}

/// One synthetic session of `count` messages: user asks, assistant answers
/// or calls a tool, tool results come back.
fn conversation(vocab: &Vocabulary, rng: &mut Rng, count: usize) -> Vec<Message> {
    let mut messages = Vec::with_capacity(count);
    let mut pending: Option<ToolCall> = None;
    while messages.len() < count {
        let next = if let Some(call) = pending.take() {
            let len = 10 + rng.below(60);
            Message::tool_result(&call, vocab.text(rng, len), rng.below(20) == 0)
        } else if messages.len() % 6 == 0 {
            let len = 5 + rng.below(30);
            Message::user(vocab.text(rng, len))
        } else if rng.below(2) == 0 {
            let arg_words = 3 + rng.below(5);
            let call = ToolCall {
                id: format!("call_{}", rng.next_u64() % 1_000_000_000),
                name: ["terminal", "read_file", "search_files", "patch"][rng.below(4)].to_owned(),
                arguments: serde_json::json!({ "command": vocab.text(rng, arg_words) }).to_string(),
            };
            pending = Some(call.clone());
            let len = rng.below(15);
            Message::assistant(vocab.text(rng, len), vec![call])
        } else {
            let len = 10 + rng.below(50);
            Message::assistant(vocab.text(rng, len), Vec::new())
        };
        messages.push(next);
    }
    messages
}

/// What [`generate`] inserted and how long the inserts took (text generation
/// excluded).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Generated {
    pub sessions: usize,
    pub messages: usize,
    pub insert_time: Duration,
}

impl Generated {
    /// Insert throughput.
    pub fn messages_per_second(&self) -> f64 {
        self.messages as f64 / self.insert_time.as_secs_f64().max(f64::EPSILON)
    }
}

/// Fills `store` with `sessions` sessions of `messages_per_session` messages
/// each, through the same insert path as `append_messages` (indexed for
/// search at the next search, as there), committing about every 20,000 messages. Deterministic text for a
/// given `seed`; session ids are fresh (`bench_...`) so it can run repeatedly.
pub fn generate(
    store: &mut Store,
    sessions: usize,
    messages_per_session: usize,
) -> Result<Generated, StoreError> {
    generate_seeded(store, sessions, messages_per_session, 0x5EED)
}

/// [`generate`] with an explicit seed.
pub fn generate_seeded(
    store: &mut Store,
    sessions: usize,
    messages_per_session: usize,
    seed: u64,
) -> Result<Generated, StoreError> {
    const CTX: &str = "generating benchmark data";
    let vocab = Vocabulary::new();
    let mut rng = Rng::new(seed);
    let per_batch = (BATCH_MESSAGES / messages_per_session.max(1)).max(1);
    let mut insert_time = Duration::ZERO;
    let mut done = 0;
    while done < sessions {
        let count = per_batch.min(sessions - done);
        let batch: Vec<(NewSession, Vec<Message>)> = (0..count)
            .map(|i| {
                let new = NewSession {
                    id: new_id("bench"),
                    parent_session_id: None,
                    agent_id: None,
                    source: SessionSource::Cli,
                    cwd: format!("/home/dev/project{}", (done + i) % 7),
                    model: "bench-model".to_owned(),
                    provider: "openai".to_owned(),
                    system_prompt: "You are herald, a coding agent.".to_owned(),
                };
                (new, conversation(&vocab, &mut rng, messages_per_session))
            })
            .collect();
        let started = Instant::now();
        let path = &store.path;
        let tx = store
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql(path, CTX))?;
        for (new, messages) in &batch {
            insert_session(&tx, path, new)?;
            insert_messages(&tx, path, &new.id, messages)?;
        }
        tx.commit().map_err(sql(path, CTX))?;
        insert_time += started.elapsed();
        done += count;
    }
    Ok(Generated {
        sessions,
        messages: sessions * messages_per_session,
        insert_time,
    })
}

/// `n` search queries like a model would send: one or two words from the
/// middle of the frequency range (not stop words, not hapaxes), sometimes a
/// hyphenated pair.
pub fn sample_queries(n: usize, seed: u64) -> Vec<String> {
    let vocab = Vocabulary::new();
    let mut rng = Rng::new(seed);
    // Log-uniform ranks between 50 and 20,000.
    let pick = |rng: &mut Rng| {
        let rank = (50.0 * (400.0f64).powf(rng.unit())) as usize;
        vocab.word(rank).to_owned()
    };
    (0..n)
        .map(|_| match rng.below(10) {
            0..=4 => pick(&mut rng),
            5..=8 => format!("{} {}", pick(&mut rng), pick(&mut rng)),
            _ => format!("{}-{}", pick(&mut rng), pick(&mut rng)),
        })
        .collect()
}
