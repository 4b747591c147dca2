// How many tokens a text is, approximately, without the model's tokenizer (which is not public). Characters / 4
// is right on average for English prose and wrong everywhere else: it counts a JSON document's punctuation as a
// quarter token each (a BPE tokenizer gives most of it a token of its own), a long number as a quarter token per
// digit (BPE vocabularies hold at most three digits per token), and a CJK sentence as a quarter token per
// character (about one each). This counts the pieces a BPE tokenizer splits text into:
//
// - a run of letters (with the one space before it) is one token up to 8 letters, then one per further 5
//   (frequent English words are single tokens; rare and long ones split into pieces of 4–6 letters);
// - a run of digits is one token per 3 digits;
// - a run of other visible characters (punctuation, quotes, braces, symbols) is one token per 2 (JSON's `":`,
//   `",` and `{"` are single tokens);
// - a CJK, kana or hangul character is one token;
// - whitespace other than the single space before a word is one token per run (a newline, indentation).
//
// It is an approximation: no API access here to compare with the real count_tokens. It errs high on code-like
// text and is within the spread of chars/4 on prose; what matters to the tests and benchmarks that use it is
// that prompts, tool results and JSON are counted in the same proportion the real tokenizer counts them.

const PIECE =
  /( ?)(\p{Script=Han}|\p{Script=Hiragana}|\p{Script=Katakana}|\p{Script=Hangul})|( ?)(\p{L}+)|( ?)(\p{N}+)|(\s+)|([^\s\p{L}\p{N}]+)/gu;

const LETTERS_IN_ONE_TOKEN = 8;
const LETTERS_PER_FURTHER_TOKEN = 5;
const DIGITS_PER_TOKEN = 3;
const SYMBOLS_PER_TOKEN = 2;

/** The approximate token count of `text`. */
export function countTokens(text: string): number {
  let tokens = 0;
  for (const match of text.matchAll(PIECE)) {
    if (match[2] !== undefined) tokens += 1;
    else if (match[4] !== undefined) {
      const letters = match[4].length;
      tokens += letters <= LETTERS_IN_ONE_TOKEN ? 1 : 1 + Math.ceil((letters - LETTERS_IN_ONE_TOKEN) / LETTERS_PER_FURTHER_TOKEN);
    } else if (match[6] !== undefined) tokens += Math.ceil(match[6].length / DIGITS_PER_TOKEN);
    else if (match[8] !== undefined) tokens += Math.ceil(match[8].length / SYMBOLS_PER_TOKEN);
    else tokens += 1;
  }
  return tokens;
}

/**
 * What one web search result adds to the input of every later call that carries it: the API bills the page
 * extract it encrypts as input tokens. 1,000 is an estimate of a few paragraphs of page text (about 750 words),
 * the order of magnitude of the input growth reported for a search of 5–10 results (5,000–10,000 tokens); the
 * API does not publish a figure.
 */
export const WEB_SEARCH_RESULT_TOKENS = 1_000;
