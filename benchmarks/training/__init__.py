"""The training benchmarks' shared parts: train_demo.py, train_me5.py and train_xlmr.py.

`runs`: what each benchmarked run is and its settings; `flops`: the model FLOPs of a
micro-batch; `record`: the per-step measurements and their summary; `demo`: the demo
corpus prepared as the workflow prepares it and the real `Trainer` stepped on it (the demo
and me5 shapes); `xlmr`: the xlm-roberta-base shape on synthetic batches; `report`: the
printed table.
"""
