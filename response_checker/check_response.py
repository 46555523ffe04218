"""Stage 5 of OR-Bench: an LLM judge labels each response an answer or a refusal.

In:  --input_file: a stage-4 merged file (or any CSV/parquet with `prompt` and `response`;
     `category` carried along).
Out: ./{input stem}_response_check_merged_{check_model}.csv with columns
     prompt, answer_category, answer_type_response, response, category
     answer_category is direct_answer, direct_refusal, indirect_refusal, or `unscored` when
     the judge's verdict (the last [[...]] in its reply) cannot be read, or the response is
     empty. Unscored rows are never counted as refusals; they are also copied to
     ..._response_check_unscored_{check_model}.csv. Failed requests go to
     ..._response_check_failed_{check_model}.csv. Settings and counts: .run.json beside it.
At the end it prints the rejection rate per category (refusal = direct_refusal or
indirect_refusal), with the counts of scored, unscored and failed rows.
Defaults: --check_model=local, temperature 0, max_tokens 1000.

Example: python check_response.py --check_model=gpt4 --input_file=../alignment_checker/final_gpt4_results/gpt4_merged_hard.csv
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from orbench.stages.check_response import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
