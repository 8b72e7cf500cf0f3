"""The published Python SDK's pairwise evaluation, end to end: two experiments on a new dataset, then
evaluate_comparative over them. Reads LANGSMITH_ENDPOINT / LANGSMITH_API_KEY; prints one JSON line for the
calling spec (comparative-experiments.e2e.spec.ts), which checks what the service stored."""
import json
import time
import uuid

from langsmith import Client
from langsmith.evaluation import evaluate, evaluate_comparative

client = Client()
name = f"py-pairwise-{uuid.uuid4().hex[:8]}"
dataset = client.create_dataset(name)
client.create_examples(
    dataset_id=dataset.id,
    examples=[
        {"inputs": {"question": "1+2"}, "outputs": {"answer": "3"}},
        {"inputs": {"question": "2+2"}, "outputs": {"answer": "4"}},
    ],
)

experiments = []
for prefix, answer in (("right", lambda q: str(eval(q))), ("wrong", lambda q: "5")):
    res = evaluate(lambda inputs, a=answer: {"answer": a(inputs["question"])}, data=name, experiment_prefix=prefix, client=client)
    experiments.append(res.experiment_name)
client.flush()
# evaluate_comparative reads both experiments' root runs: wait (bounded) until they are readable.
for name_ in experiments:
    for _ in range(100):
        if len(list(client.list_runs(project_name=name_, is_root=True))) == 2:
            break
        time.sleep(0.1)


def prefer_right(runs, example):
    """1 for the run whose answer matches the reference, 0 for the other."""
    expected = example.outputs["answer"]
    return {"key": "preference", "scores": {run.id: 1 if run.outputs["answer"] == expected else 0 for run in runs}}


result = evaluate_comparative(tuple(experiments), evaluators=[prefer_right], experiment_prefix="py-pairwise", metadata={"judge": "reference"}, client=client)
rows = list(result)
client.flush()
print(
    json.dumps(
        {
            "dataset_id": str(dataset.id),
            "comparative_experiment_id": str(result.comparative_experiment.id),
            "experiments": experiments,
            "results": len(rows),
        }
    )
)
