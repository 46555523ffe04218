// Sorts a table.sortable by the clicked column: by number where both cells are numbers (a cell's data-v when it has one), else as text; blanks and text after numbers.
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      var asc = !th.classList.contains('asc');
      table.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc ? 'asc' : 'desc');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(r){var c=r.cells[col]; return c.getAttribute('data-v') !== null ? c.getAttribute('data-v') : c.textContent;}
      rows.sort(function(a, b){
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var ex = x === '' || isNaN(nx) && !isNaN(ny), ey = y === '' || isNaN(ny) && !isNaN(nx);
        if (ex !== ey) return ex ? 1 : -1;
        var d = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? d : -d;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
