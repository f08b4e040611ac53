// Not part of the page: a script with mistakes that the page's lint (src/viz/.eslintrc.json) must
// report, each on its line below; check_lint_catches.sh fails if one goes unreported.
(function () {
  "use strict";
  var total = 0, unused = 1;
  function add(v) { totl += v; }
  var point = {x: 1, x: 2};
  if (point.x == "1") add(1);
  return total;
  add(2);
})();
