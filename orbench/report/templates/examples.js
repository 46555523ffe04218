// Filters every .filters bar's table by its selects and search box; rows are only hidden.
document.querySelectorAll('.filters').forEach(function(bar){
  var table = document.getElementById(bar.getAttribute('data-table'));
  if (!table) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var texts = rows.map(function(r){ return r.textContent.toLowerCase(); });
  var count = bar.querySelector('.count');
  var controls = Array.prototype.slice.call(bar.querySelectorAll('select, input'));
  function apply(){
    var want = {};
    controls.forEach(function(c){ want[c.getAttribute('data-key')] = c.value; });
    var q = (want.q || '').trim().toLowerCase(), shown = 0;
    rows.forEach(function(r, i){
      var ok = (!want.model || r.getAttribute('data-model') === want.model)
        && (!want.set || r.getAttribute('data-set') === want.set)
        && (!want.cat || r.getAttribute('data-cat') === want.cat)
        && (!q || texts[i].indexOf(q) !== -1);
      r.hidden = !ok;
      if (ok) shown++;
    });
    count.textContent = 'Showing ' + shown.toLocaleString('en') + ' of '
      + rows.length.toLocaleString('en') + ' rows';
  }
  controls.forEach(function(c){
    c.addEventListener('input', apply);
    c.addEventListener('change', apply);
  });
  apply();
});
