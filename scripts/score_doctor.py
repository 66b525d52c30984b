import json,subprocess,collections,sys
M={1:'weights_do_not_fit',2:'kv_cache',3:'concurrency',4:'fragmentation',5:'activation_peak',6:'cuda_graphs',7:'other_processes',8:'host_memory',0:'not_oom',-1:'unknown','weights_too_large':'weights_do_not_fit','kv_cache_budget':'kv_cache','batch_concurrency':'concurrency','allocator_fragmentation':'fragmentation','activation_prefill_peak':'activation_peak','cuda_graph_capture':'cuda_graphs','other_tenant_or_gpu_mem_util':'other_processes','host_ram_oom':'host_memory','not_oom_lookalike':'not_oom'}
binp=sys.argv[1]; ok=0; rows=[json.loads(l) for l in open(sys.argv[2])]
conf=collections.Counter()
for r in rows:
    out=subprocess.run([binp,'doctor','-','--json'],input=r['error_excerpt'],capture_output=True,text=True)
    try: c=json.loads(out.stdout)['cause']
    except Exception: c='ERR'
    exp=M.get(r['root_cause_class'],r['root_cause_class'])
    good = c==exp
    ok+=good
    if not good: conf[(exp,c)]+=1
    if len(sys.argv)>3 and not good: print(r['id'],exp,'->',c)
print(ok,'/',len(rows))
for k,v in conf.most_common(): print(v,k)
