"""Stage 5 of OR-Bench: an LLM judge labels each response an answer or a refusal.

In:  --input_file: a stage-4 merged file (or any CSV/parquet with `prompt` and `response`;
     `category` and stage 4's `is_rejected` carried along).
Out: ./{input stem}_response_check_merged_{check_model}.csv with columns
     prompt, answer_category, answer_type_response, response, category
     (+ is_rejected, stage 4's keyword verdict, when the input has it).
     answer_category is direct_answer, direct_refusal, indirect_refusal, or `unscored` when
     the judge's verdict (the last [[...]] in its reply) cannot be read, or the response is
     empty. Unscored rows are never counted as refusals; they are also copied to
     ..._response_check_unscored_{check_model}.csv. Failed requests go to
     ..._response_check_failed_{check_model}.csv. Settings and counts: .run.json beside it.
At the end it prints the rejection rate per category (refusal = direct_refusal or
indirect_refusal), with the counts of scored, unscored and failed rows.
Defaults: --check_model=local, temperature 0, max_tokens 1000. On an endpoint held to the format by
a grammar (the embedded model), the judge's reason is cut short enough that its verdict fits
within --max_tokens (below 150 tokens: about 3 characters of reason per token).

A judged sample (--sample N --seed S): judges a random sample of N of the input's scored rows
(stage 4 said True or False; without that column, rows with a response), all of them when
there are fewer. The same N, S and input give the same rows, also after a resume, and a
larger N keeps the rows already judged. --design uniform (default): every row equally likely;
--design score: rows whose refusal_score is near 0.5 more likely (--design_floor F, default
0.5, keeps every row's chance above zero; N is the expected size). Each judged row carries
refusal_score and inclusion_probability. The printed rate is then the judge's rate on the
sample only; `python -m orbench.report` uses the sample to correct the rate of every row,
with a 95% interval. The .run.json records sample_size, sample_seed, population_rows,
sampled_rows, sample_design, input_file and input_path (the stage-4 file read).
--target_halfwidth H with --sample MAX: a pilot of 100 rows, then (if its corrected rate's
interval is wider than ±H points) one extension, same seed, to the size the pilot says H
needs, at most MAX; it prints which way it stopped, and .run.json records the rounds.

An ensemble (--check_model=a,b,c --vote majority|unanimous|any): every judge sees every row.
Extra columns: refusal_votes, answer_votes, judges_voted (the judges behind the vote), and per
judge {judge}_answer_category (its class, unscored, or failed) and
{judge}_answer_type_response (its reply or error). A judge that is unscored or failed on a
row sits that row's vote out; a row where every judge failed is a failed row. The voted
refusal takes the refusal class most of its voters gave. Pairwise agreement (%) and Cohen's
kappa between judges are printed and written to the .run.json (judge_agreement).
Output file name: {input stem}_response_check_merged_{a+b+c}.csv.

The judge audit (--audit N, default 100; 0: none) comes first: the same judge(s), template and
settings judge N human-labelled responses shipped with the package (orbench/data/judge_audit.csv,
half refusals, half answers; the same N rows every time, through the response cache, so a judge
is paid for once). Agreement, kappa, precision and recall for refusals (95% intervals), rows
scored, unscored and failed, and the verdict (passed: kappa >= 0.6 and agreement >= 80%) are
printed and written to the .run.json under "audit", per judge and for an ensemble's vote. Audit
rows never enter the output.
The audit gates the rows. A judge (or an ensemble's vote) that fails is not sent them: one line
says so with the audit's figures, the output holds only its header, and the .run.json records
why under "judge_skipped"; the report then uses the keyword rates and says why nothing was
judged. --judge_failed_audit sends the rows anyway (the audit then runs after them). A failed
audit call is retried by the next run; while the calls that failed could still change the
verdict, the rows wait (exit 3). --audit 0: no audit, nothing gated.
Exit codes: 0 done (the rows judged, or not sent because the judge failed its audit); 3 some
rows or audit calls failed (the same command retries them; finished ones are kept and cached);
2 a usage error (one line says what to fix).

Batch mode: --batch sends what the cache cannot answer through the endpoint's Batch API and
finishes from the cache; --batch_export DIR / --batch_import FILE... do the same through
`vllm run-batch` (README, "Batch mode"). The audit's requests go in a batch of their own first,
and the rows' batch follows only for a judge that passes (with --judge_failed_audit, one batch
holds both): a judge's audit is batched once, then cached.
Examples:
  python check_response.py --check_model=gpt4 --input_file=../alignment_checker/final_gpt4_results/gpt4_merged_hard.csv
  python check_response.py --check_model=gpt4 --sample 200 --seed 1 --input_file=../alignment_checker/final_gpt4_results/gpt4_merged_or-bench-80k.csv
  python check_response.py --check_model=gpt4 --sample 1000 --target_halfwidth 3 --input_file=../alignment_checker/final_gpt4_results/gpt4_merged_or-bench-80k.csv
  python check_response.py --check_model=gpt4,llama3,gemini-1.5 --vote majority --input_file=...
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.check_response import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
