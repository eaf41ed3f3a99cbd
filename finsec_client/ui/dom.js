"use strict";
// What the run viewer and the live page draw with. Every value from a run or a server is put in the page as text
// (textContent, or an attribute that is only ever text); no value becomes markup, a link or a style.
const finsecDom = (() => {
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "class") node.className = value;
      else node.setAttribute(name, value); // only the pages' own names: class, type, title, colspan, data-*
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  const fmt = (x, digits) => (x === null || x === undefined ? "-" : Number(x).toFixed(digits));

  return { el, fmt };
})();
