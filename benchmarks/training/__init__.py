"""The training benchmarks' shared parts: train_demo.py, train_me5.py and train_xlmr.py.

`runs`: what each benchmarked run is and its settings; `record`: the per-step measurements
and their summary (model FLOPs: `xlsent.train.flops`, as every training counts them);
`demo`: the demo corpus prepared as the workflow prepares it and the real `Trainer` stepped
on it (the demo and me5 shapes); `xlmr`: the xlm-roberta-base shape on synthetic batches of
real sentence lengths (`lengths`: a corpus's, in XLM-R's vocabulary); `report`: the printed
table.
"""
